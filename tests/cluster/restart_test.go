package cluster_test

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker/redis/redistest"
)

// TestRedisRestartDuringStream restarts Redis in the middle of 10,000
// publishes, made through the API of both nodes, to 20 subscribers spread
// over both nodes. Redis keeps an append-only file synced on every write,
// so the stream survives the restart, and the nodes are told so
// (engine.redis.durable_restarts) so that it keeps its epoch;
// what is lost is every node's pub/sub subscription, and with it the
// publications made before the node subscribed again. Every subscriber
// must be told (unsubscribe 2500), recover them from history, and end up
// with all 10,000 exactly once in offset order.
func TestRedisRestartDuringStream(t *testing.T) {
	t.Parallel()
	const (
		channel = "chat:stream"
		total   = 10000
		subs    = 20
	)
	srv := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	cfg := func(name string) config {
		r := redisAt(srv.Addr)
		r["durable_restarts"] = true
		c := nodeConfig(name, r)
		// The test is about continuity, not about the recovery limit:
		// a slow machine may let hundreds of publications pass while a
		// node resubscribes.
		return c.set("client.recovery_max_publication_limit", total)
	}
	nodes := []*gyreNode{startNode(t, "A", cfg("A")), startNode(t, "B", cfg("B"))}

	var followers []*follower
	for i := range subs {
		n := nodes[i%2]
		followers = append(followers, startFollower(t, fmt.Sprintf("%s/%d", n.name, i), fmt.Sprintf("user%d", i), channel, n.wsURL()))
	}
	for _, f := range followers {
		f.waitSubscribed(t)
	}

	var acked atomic.Int64
	pubs := make([]*publisher, len(nodes))
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		pubs[i] = &publisher{node: n, channel: channel, batch: 50, acked: &acked}
		wg.Go(func() { errs[i] = pubs[i].run(numbers(total, len(nodes), i), 3*time.Minute) })
	}

	eventually(t, "2,000 acknowledged publishes", 2*time.Minute, func() bool { return acked.Load() >= 2000 })
	ackedAtKill := acked.Load()
	srv.Kill()
	time.Sleep(time.Second)
	srv.Restart()
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	top, epoch := nodes[0].streamTop(t, channel)
	if top != total {
		t.Fatalf("stream top after %d publishes is %d", total, top)
	}
	epochs := map[string]bool{}
	for _, p := range pubs {
		maps.Copy(epochs, p.epochs)
	}
	if len(epochs) != 1 || !epochs[epoch] {
		t.Errorf("publishes answered with epochs %v, the stream has %s", slices.Collect(maps.Keys(epochs)), epoch)
	}
	recovered := 0
	for _, f := range followers {
		f.waitOffset(t, total, 2*time.Minute)
		f.close()
		recovered += f.verify(t, total, epoch)
		if f.resubscribes+f.reconnects == 0 {
			t.Errorf("follower %s was never told it may have missed publications (no unsubscribe 2500, no reconnect)", f.name)
		}
	}
	t.Logf("Redis killed after %d acknowledged publishes; %d failed publishes retried; %d of %d deliveries came through recovery",
		ackedAtKill, pubs[0].failures.Load()+pubs[1].failures.Load(), recovered, total*subs)
}
