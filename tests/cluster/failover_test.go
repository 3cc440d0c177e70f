package cluster_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/tests/internal/gyreproc"
)

// TestSentinelFailover: two nodes on a master, a replica and three
// Sentinels; a graceful SENTINEL FAILOVER while one node's API publishes.
// Redis replicates asynchronously, so the old master may acknowledge
// publications the new master never gets. Steady followers (connected
// throughout) and flapping ones (reconnecting every 700 ms, recovering
// each time) count every offset: each ends at the stream's final position,
// holding in the final epoch what the stream holds there, and any publication it did not get it was told of (recovered=false or a
// new epoch after an unsubscribe 2500); never an offset gap, a repeat or a
// recovery that claims success across the loss.
func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	const (
		channel = "chat:sentinel"
		total   = 6000
	)
	s := redistest.StartSentinel(t)
	cfg := func(name string) gyreproc.Config {
		c := nodeConfig(name, map[string]any{
			"sentinel_address":     s.Addrs(),
			"sentinel_master_name": redistest.MasterName,
		})
		return c.Set("client.recovery_max_publication_limit", total)
	}
	a := gyreproc.Start(t, "A", cfg("A"))
	b := gyreproc.Start(t, "B", cfg("B"))

	var all []*follower
	for i := range 8 {
		node, other := a, b
		if i%2 == 1 {
			node, other = b, a
		}
		name := fmt.Sprintf("user%d", i)
		f := &follower{name: node.Name + "/" + name, user: name, channel: channel, urls: []string{node.WSURL(), other.WSURL()}, toldLoss: true}
		if i >= 4 {
			f.name += "/flapping"
			f.flapEvery = 700 * time.Millisecond
		}
		all = append(all, startConfiguredFollower(t, f))
	}
	for _, f := range all {
		f.waitSubscribed(t)
	}

	var acked atomic.Int64
	pub := &publisher{node: a, channel: channel, batch: 10, pause: 10 * time.Millisecond, acked: &acked}
	errc := make(chan error, 1)
	go func() { errc <- pub.run(numbers(total, 1, 0), 3*time.Minute) }()
	eventually(t, "1,500 acknowledged publishes", 2*time.Minute, func() bool { return acked.Load() >= 1500 })
	atFailover := acked.Load()
	s.Failover(t)
	s.WaitMaster(t, s.Replica.Addr)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}

	top, epoch := streamTop(t, a, channel)
	history, _ := historyNumbers(t, a, channel)
	for _, f := range all {
		f.waitUntilFor(t, fmt.Sprintf("offset %d of epoch %s", top, epoch), 2*time.Minute, func() bool {
			return f.epoch == epoch && f.offset >= top
		})
		f.mu.Lock()
		if len(f.problems) > 0 {
			t.Errorf("follower %s: silent loss or repeat:\n  %v\nevents up to the first:\n%s", f.name, f.problems, strings.Join(f.beforeProblem, "\n"))
		}
		// What it holds in the final epoch is what the stream holds
		// there: a position handed out twice in one epoch would show
		// here as another publication at the same offset.
		wrong := 0
		for _, d := range f.got {
			if n, ok := history[d.offset]; d.epoch == epoch && (!ok || n != d.n) {
				wrong++
			}
		}
		if wrong > 0 {
			t.Errorf("follower %s: %d publications it holds in epoch %s are not the stream's at their offsets", f.name, wrong, epoch)
		}
		t.Logf("follower %s: %d publications, told of a loss %d times, %d resubscribes, %d reconnects",
			f.name, len(f.got), f.told, f.resubscribes, f.reconnects)
		f.mu.Unlock()
	}
	t.Logf("failover after %d acknowledged publishes; stream ends at %d in epoch %s (publisher epochs %v, %d failures)",
		atFailover, top, epoch, pub.epochs, pub.failures.Load())
}
