package cluster_test

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker/nats/natstest"
	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/tests/internal/gyreproc"
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
	cfg := func(name string) gyreproc.Config {
		r := redisAt(srv.Addr)
		r["durable_restarts"] = true
		c := nodeConfig(name, r)
		// The test is about continuity, not about the recovery limit:
		// a slow machine may let hundreds of publications pass while a
		// node resubscribes.
		return c.Set("client.recovery_max_publication_limit", total)
	}
	nodes := []*gyreproc.Node{gyreproc.Start(t, "A", cfg("A")), gyreproc.Start(t, "B", cfg("B"))}
	s := streamThroughOutage(t, nodes, channel, total, subs, func() {
		srv.Kill()
		time.Sleep(time.Second)
		srv.Restart()
	})
	for _, f := range s.followers {
		if f.resubscribes+f.reconnects == 0 {
			t.Errorf("follower %s was never told it may have missed publications (no unsubscribe 2500, no reconnect)", f.name)
		}
	}
	t.Logf("Redis killed after %d acknowledged publishes; %d failed publishes retried; %d of %d deliveries came through recovery",
		s.ackedAtOutage, s.failures, s.recovered, total*subs)
}

// TestNATSRestartDuringStream restarts nats-server in the middle of
// 10,000 publishes, made through the API of both nodes, to 20 subscribers
// spread over both nodes, with history in JetStream (on that same server,
// whose store survives the restart) and in Redis (redisnats). Publishes
// fail while NATS is down and are retried; every subscriber must end up
// with all 10,000 exactly once in offset order, whether it was told to
// recover or its node filled the gap from the store.
func TestNATSRestartDuringStream(t *testing.T) {
	t.Parallel()
	const (
		channel = "chat:stream"
		total   = 10000
		subs    = 20
	)
	for _, jetstream := range []bool{true, false} {
		name := map[bool]string{true: "nats-jetstream", false: "redisnats"}[jetstream]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r, n := redistest.Start(t), natstest.Start(t)
			cfg := func(name string) gyreproc.Config {
				b := natsBroker(n.URL, jetstream)
				if !jetstream {
					b["type"] = "redisnats"
					b["redis"] = redisAt(r.Addr)
				}
				c := nodeConfig(name, redisAt(r.Addr)).Set("broker", b)
				return c.Set("client.recovery_max_publication_limit", total)
			}
			nodes := []*gyreproc.Node{gyreproc.Start(t, "A", cfg("A")), gyreproc.Start(t, "B", cfg("B"))}
			s := streamThroughOutage(t, nodes, channel, total, subs, func() {
				n.Kill()
				time.Sleep(time.Second)
				n.Restart(t)
			})
			told := 0
			for _, f := range s.followers {
				told += f.resubscribes + f.reconnects
			}
			t.Logf("NATS killed after %d acknowledged publishes; %d failed publishes retried; %d of %d deliveries came through recovery; %d resubscribes or reconnects",
				s.ackedAtOutage, s.failures, s.recovered, total*subs, told)
		})
	}
}

// outageRun is what streamThroughOutage saw.
type outageRun struct {
	followers     []*follower
	ackedAtOutage int64
	failures      int64
	recovered     int
}

// streamThroughOutage publishes total numbers into channel through the
// API of every node, with subs followers spread over the nodes, runs
// outage once 2,000 publishes were acknowledged, and checks that the
// stream holds them all in one epoch and that every follower got each
// exactly once in offset order.
func streamThroughOutage(t *testing.T, nodes []*gyreproc.Node, channel string, total, subs int, outage func()) outageRun {
	t.Helper()
	var followers []*follower
	for i := range subs {
		n := nodes[i%len(nodes)]
		followers = append(followers, startFollower(t, fmt.Sprintf("%s/%d", n.Name, i), fmt.Sprintf("user%d", i), channel, n.WSURL()))
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
	run := outageRun{followers: followers, ackedAtOutage: acked.Load()}
	outage()
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	top, epoch := streamTop(t, nodes[0], channel)
	if top != uint64(total) {
		t.Fatalf("stream top after %d publishes is %d", total, top)
	}
	epochs := map[string]bool{}
	for _, p := range pubs {
		maps.Copy(epochs, p.epochs)
		run.failures += p.failures.Load()
	}
	if len(epochs) != 1 || !epochs[epoch] {
		t.Errorf("publishes answered with epochs %v, the stream has %s", slices.Collect(maps.Keys(epochs)), epoch)
	}
	for _, f := range followers {
		f.waitOffset(t, uint64(total), 2*time.Minute)
		f.close()
		run.recovered += f.verify(t, total, epoch)
	}
	return run
}
