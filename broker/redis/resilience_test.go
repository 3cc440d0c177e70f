package redis

import (
	"errors"
	"log/slog"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/internal/logtest"
)

var history = broker.PublishOptions{HistorySize: 100, HistoryTTL: time.Minute}

// runBroker returns a running broker of a new engine with an events
// handler.
func runBroker(t *testing.T, cfg Config) (*Broker, *events) {
	t.Helper()
	b := newEngine(t, cfg).Broker()
	ev := newEvents()
	if err := b.Run(ev); err != nil {
		t.Fatalf("Run: %v", err)
	}
	return b, ev
}

func mustPublish(t *testing.T, b *Broker, ch, data string) broker.StreamPosition {
	t.Helper()
	sp, _, err := b.Publish(ch, []byte(data), history)
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	return sp
}

// expectData waits for the next publication and checks its payload.
func expectData(t *testing.T, ev *events, ch, data string) {
	t.Helper()
	d := ev.next(t)
	if d.channel != ch || string(d.pub.Data) != data {
		t.Fatalf("delivered %q on %q, want %q on %q", d.pub.Data, d.channel, data, ch)
	}
}

// waitLost waits until every one of chs is reported lost.
func waitLost(t *testing.T, ev *events, chs ...string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	missing := slices.Clone(chs)
	for len(missing) > 0 {
		select {
		case lost := <-ev.lost:
			missing = slices.DeleteFunc(missing, func(ch string) bool { return slices.Contains(lost, ch) })
		case <-deadline:
			t.Fatalf("%q never reported lost", missing)
		}
	}
}

// TestRestart: Redis is killed and started again on the same port. While
// it is down, Healthy and Publish report broker.ErrNotAvailable; once it
// is back the broker resubscribes by itself, reports the channel lost (so
// that the engine recovers through History) and delivers again.
func TestRestart(t *testing.T) {
	eachRESP(t, testRestart)
}

func testRestart(t *testing.T, resp2 bool) {
	srv := redistest.Start(t)
	b, ev := runBroker(t, Config{Addresses: []string{srv.Addr}, IOTimeout: time.Second, ForceRESP2: resp2})
	pm := b.e.PresenceManager()
	const ch = "restart"
	if err := b.Subscribe(ch); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	mustPublish(t, b, ch, "before")
	expectData(t, ev, ch, "before")
	if err := b.Healthy(); err != nil {
		t.Fatalf("Healthy while up: %v", err)
	}

	srv.Kill()
	eventually(t, "Healthy to report the outage", func() bool { return b.Healthy() != nil })
	if err := b.Healthy(); !errors.Is(err, broker.ErrNotAvailable) {
		t.Errorf("Healthy = %v, want ErrNotAvailable", err)
	}
	if _, _, err := b.Publish(ch, []byte("during"), history); !errors.Is(err, broker.ErrNotAvailable) {
		t.Errorf("Publish while down: %v, want ErrNotAvailable", err)
	}
	keyed := history
	keyed.IdempotencyKey = "k" // retried once on a broken connection
	items := []broker.PublishItem{{Channel: ch, Data: []byte("during"), Opts: history}, {Channel: ch, Data: []byte("during"), Opts: keyed}}
	b.PublishMany(items)
	for i, it := range items {
		if !errors.Is(it.Err, broker.ErrNotAvailable) {
			t.Errorf("PublishMany while down, item %d: %v, want ErrNotAvailable", i, it.Err)
		}
	}
	if _, _, err := b.History(ch, broker.HistoryOptions{}); !errors.Is(err, broker.ErrNotAvailable) {
		t.Errorf("History while down: %v, want ErrNotAvailable", err)
	}
	if err := b.Subscribe("other"); !errors.Is(err, broker.ErrNotAvailable) {
		t.Errorf("Subscribe while down: %v, want ErrNotAvailable", err)
	}
	if err := pm.Healthy(); !errors.Is(err, broker.ErrNotAvailable) {
		t.Errorf("PresenceManager.Healthy while down: %v, want ErrNotAvailable", err)
	}
	if err := pm.AddPresence(ch, "c", nil); !errors.Is(err, broker.ErrNotAvailable) {
		t.Errorf("AddPresence while down: %v, want ErrNotAvailable", err)
	}

	srv.Restart()
	waitLost(t, ev, ch)
	eventually(t, "Healthy after the restart", func() bool { return b.Healthy() == nil })
	eventually(t, "PresenceManager.Healthy after the restart", func() bool { return pm.Healthy() == nil })
	// History is safe to retry, so its first call after the outage
	// goes through although the idle connection it finds is broken.
	if _, top, err := b.History(ch, broker.HistoryOptions{}); err != nil || top.Offset != 0 {
		t.Errorf("History after the restart: top %+v, error %v; want a new stream", top, err)
	}
	var sp broker.StreamPosition
	eventually(t, "Publish after the restart", func() bool {
		var err error
		sp, _, err = b.Publish(ch, []byte("after"), history)
		if err != nil && !errors.Is(err, broker.ErrNotAvailable) {
			t.Fatalf("Publish after the restart: %v", err)
		}
		return err == nil
	})
	expectData(t, ev, ch, "after")
	if sp.Offset != 1 {
		t.Errorf("first publish after a restart without persistence got offset %d, want 1 (new stream)", sp.Offset)
	}
}

// TestStopAndStart: Redis shuts down and stays down for several reconnect
// attempts, long enough for their waits to reach the cap, then starts
// again. The broker resubscribes by itself, reports the channel lost (so
// that the engine recovers through History) and delivers again; its log
// says once that the connection was lost and once that it is back, the
// failed attempts in between at debug level only.
func TestStopAndStart(t *testing.T) {
	srv := redistest.Start(t)
	logs := &logtest.Recorder{MinLevel: slog.LevelDebug}
	b, ev := runBroker(t, Config{Addresses: []string{srv.Addr}, IOTimeout: time.Second, Logger: slog.New(logs)})
	const ch = "stopstart"
	if err := b.Subscribe(ch); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	mustPublish(t, b, ch, "before")
	expectData(t, ev, ch, "before")

	srv.Stop()
	const failed = 6
	eventually(t, "reconnect attempts to fail", func() bool {
		return len(logs.Find(slog.LevelDebug, "redis: pub/sub reconnect failed", nil)) >= failed
	})
	if err := b.Healthy(); !errors.Is(err, broker.ErrNotAvailable) {
		t.Errorf("Healthy while down: %v, want ErrNotAvailable", err)
	}
	srv.Restart()
	waitLost(t, ev, ch)
	eventually(t, "Publish after the restart", func() bool {
		_, _, err := b.Publish(ch, []byte("after"), history)
		return err == nil
	})
	expectData(t, ev, ch, "after")
	// Messages flow once the subscriptions are made, a moment before the
	// connection counts as back and says so.
	eventually(t, "Healthy after the restart", func() bool { return b.Healthy() == nil })

	if n := len(logs.Find(slog.LevelWarn, "redis: pub/sub connection lost, resubscribing", nil)); n != 1 {
		t.Errorf("%d warnings of the lost connection, want 1", n)
	}
	back := logs.Find(slog.LevelInfo, "redis: pub/sub resubscribed", nil)
	if len(back) != 1 {
		t.Fatalf("%d records of the resubscription, want 1", len(back))
	}
	if n := back[0].Attrs["attempts"].Int64(); n <= failed {
		t.Errorf("resubscribed after %d attempts, want more than %d", n, failed)
	}
}

// TestHungRedis: a Redis that stops answering makes calls fail within the
// I/O timeout instead of hanging.
func TestHungRedis(t *testing.T) {
	srv := redistest.Start(t)
	b, ev := runBroker(t, Config{Addresses: []string{srv.Addr}, IOTimeout: 300 * time.Millisecond})
	const ch = "hung"
	if err := b.Subscribe(ch); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	srv.Pause()
	if _, _, err := b.Publish(ch, []byte("x"), history); !errors.Is(err, broker.ErrNotAvailable) {
		t.Errorf("Publish to a hung Redis: %v, want ErrNotAvailable", err)
	}
	eventually(t, "Healthy to notice the hung connection", func() bool { return b.Healthy() != nil })
	srv.Resume()
	waitLost(t, ev, ch)
	eventually(t, "Publish to work again", func() bool {
		_, _, err := b.Publish(ch, []byte("back"), history)
		return err == nil
	})
	d := ev.next(t)
	for string(d.pub.Data) != "back" { // a publish that timed out may still have reached Redis
		d = ev.next(t)
	}
}

// TestReconnectsDoNotLeak: goroutines return to their count after many
// outages.
func TestReconnectsDoNotLeak(t *testing.T) {
	srv := redistest.Start(t)
	b, ev := runBroker(t, Config{Addresses: []string{srv.Addr}, PubSubShards: 2, IOTimeout: time.Second})
	chs := []string{"leak1", "leak2", "leak3"}
	for _, ch := range chs {
		if err := b.Subscribe(ch); err != nil {
			t.Fatalf("Subscribe: %v", err)
		}
	}
	settle := func() int {
		// Publishing through every shard lets rueidis start its lazy
		// goroutines before counting.
		for _, ch := range chs {
			// The first command on a connection that broke while idle
			// fails (it is not retried: it may have run).
			eventually(t, "Publish to work", func() bool {
				_, _, err := b.Publish(ch, []byte("x"), history)
				return err == nil
			})
			ev.next(t)
		}
		return runtime.NumGoroutine()
	}
	base := settle()
	for i := range 10 {
		srv.Kill()
		eventually(t, "the outage to be noticed", func() bool { return b.Healthy() != nil })
		srv.Restart()
		eventually(t, "the broker to recover", func() bool { return b.Healthy() == nil })
		waitLost(t, ev, chs...)
		t.Logf("cycle %d: %d goroutines", i, runtime.NumGoroutine())
	}
	settle()
	eventually(t, "goroutines to return to their count", func() bool {
		return runtime.NumGoroutine() <= base+2
	})
}

// TestSentinelFailover: when the master dies, the Sentinel promotes the
// replica and the broker follows it: it resubscribes, reports the loss and
// publishes again; the pattern scope it holds is subscribed again on the
// new master too, and reported lost.
func TestSentinelFailover(t *testing.T) {
	s := redistest.StartSentinel(t)
	const ch = "failover"
	b, ev := runSentinelBroker(t, s, Config{}, ch)
	const scope, scoped = "failover:", "failover:a"
	if err := b.SubscribePatternScope(scope); err != nil {
		t.Fatalf("SubscribePatternScope: %v", err)
	}
	waitPattern(t, b, ev, scope, scoped, "before")

	s.Master.Kill()
	s.WaitMaster(t, s.Replica.Addr)
	waitLost(t, ev, ch)
	eventually(t, "Publish to reach the new master", func() bool {
		_, _, err := b.Publish(ch, []byte("after"), history)
		return err == nil
	})
	for d := ev.next(t); string(d.pub.Data) != "after"; d = ev.next(t) {
	}
	waitScopeLost(t, ev, scope)
	waitPattern(t, b, ev, scope, scoped, "after")
	eventually(t, "Healthy after the failover", func() bool { return b.Healthy() == nil })
}

// TestClusterNodeRestart: a cluster node dies and comes back (with its
// slots, from its nodes.conf). Channels whose shard lives there are
// resubscribed and reported lost; all channels deliver again.
func TestClusterNodeRestart(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	b, ev := runBroker(t, Config{ClusterAddresses: c.Addrs(), ClusterShards: 8, IOTimeout: time.Second})
	var chs []string
	for i := range 16 {
		ch := "cluster" + string(rune('a'+i))
		if err := b.Subscribe(ch); err != nil {
			t.Fatalf("Subscribe: %v", err)
		}
		chs = append(chs, ch)
	}
	c.Nodes[0].Kill()
	eventually(t, "Healthy to report the dead node", func() bool { return b.Healthy() != nil })
	c.Nodes[0].Restart()
	eventually(t, "Healthy after the node is back", func() bool { return b.Healthy() == nil })
	for _, ch := range chs {
		eventually(t, "Publish to "+ch, func() bool {
			_, _, err := b.Publish(ch, []byte(ch), history)
			return err == nil
		})
	}
	seen := make(map[string]bool)
	for len(seen) < len(chs) {
		seen[ev.next(t).channel] = true
	}
	select {
	case lost := <-ev.lost:
		t.Logf("reported lost: %v", lost)
	default:
		t.Error("no channel reported lost")
	}
}
