package cluster_test

import (
	"fmt"
	"maps"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/tests/internal/gyreproc"
)

// TestNodeKilled kills one of two nodes with SIGKILL while publications
// flow: its clients reconnect to the other node and recover what they
// missed, and its presence entries, which nobody removes, expire.
func TestNodeKilled(t *testing.T) {
	t.Parallel()
	const (
		channel = "chat:failover"
		total   = 3000
	)
	srv := redistest.Start(t)
	cfg := func(name string) gyreproc.Config {
		c := nodeConfig(name, redisAt(srv.Addr))
		c.Set("engine.redis.presence_ttl", "3s")
		// Continuity is the point, not the recovery limit: how much
		// passes while a client reconnects depends on the machine.
		c.Set("client.recovery_max_publication_limit", total)
		return c.Set("client.presence_update_interval", "1s")
	}
	a := gyreproc.Start(t, "A", cfg("A"))
	b := gyreproc.Start(t, "B", cfg("B"))

	var all, onB []*follower
	for i := range 6 {
		name := fmt.Sprintf("user%d", i)
		if i%2 == 0 {
			all = append(all, startFollower(t, "A/"+name, name, channel, a.WSURL()))
			continue
		}
		f := startFollower(t, "B/"+name, name, channel, b.WSURL(), a.WSURL())
		all = append(all, f)
		onB = append(onB, f)
	}
	for _, f := range all {
		f.waitSubscribed(t)
	}
	before := currentClients(all)
	if got := presenceClients(t, a, channel); !maps.Equal(got, before) {
		t.Fatalf("presence before the kill: %v, want %v", got, before)
	}

	var acked atomic.Int64
	pub := &publisher{node: a, channel: channel, batch: 20, pause: 5 * time.Millisecond, acked: &acked}
	errc := make(chan error, 1)
	go func() { errc <- pub.run(numbers(total, 1, 0), 3*time.Minute) }()
	eventually(t, "1,000 acknowledged publishes", 2*time.Minute, func() bool { return acked.Load() >= 1000 })
	ackedAtKill := acked.Load()
	b.Kill()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}

	top, epoch := streamTop(t, a, channel)
	if top != total {
		t.Fatalf("stream top after %d publishes is %d", total, top)
	}
	recovered := 0
	for _, f := range all {
		f.waitOffset(t, total, 2*time.Minute)
		recovered += f.verify(t, total, epoch)
	}
	for _, f := range onB {
		f.mu.Lock()
		if f.reconnects == 0 {
			t.Errorf("follower %s never reconnected", f.name)
		}
		f.mu.Unlock()
	}
	t.Logf("node B killed after %d acknowledged publishes; %d deliveries came through recovery", ackedAtKill, recovered)

	// The killed node's entries leave presence once their TTL passes;
	// those of the reconnected clients (new client IDs) are there.
	after := currentClients(all)
	for _, f := range onB {
		if id := f.current(); before[id] != "" {
			t.Errorf("follower %s kept its client ID %s after reconnecting", f.name, id)
		}
	}
	eventually(t, "presence without the killed node's clients", 30*time.Second, func() bool {
		return maps.Equal(presenceClients(t, a, channel), after)
	})
}

// currentClients maps the client ID of each follower's connection to its
// user, as presence does.
func currentClients(fs []*follower) map[string]string {
	out := map[string]string{}
	for _, f := range fs {
		out[f.current()] = f.user
	}
	return out
}
