package redis

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/occupancytest"
	"github.com/gyrehq/gyre/broker/redis/redistest"
)

// occupancySetups are the Redis shapes the occupancy suite runs on: one
// Redis, two sharded by the client, a cluster.
func occupancySetups() []setup {
	var out []setup
	for _, s := range setups() {
		if s.name != "SingleRESP2" {
			out = append(out, s)
		}
	}
	return out
}

var occupancyPrefixes atomic.Int64

// occupancyNodes makes, per subtest, trackers under a prefix of their
// own, each on an engine of its own, as nodes of one cluster are.
func occupancyNodes(cfg Config) occupancytest.NewNodes {
	return func(t testing.TB) func() broker.OccupancyTracker {
		c := cfg
		c.Prefix = "occ" + strconv.FormatInt(occupancyPrefixes.Add(1), 10)
		var mu sync.Mutex
		return func() broker.OccupancyTracker {
			mu.Lock()
			defer mu.Unlock()
			return NewOccupancyTracker(newEngine(t, c))
		}
	}
}

// occupancyRoutes makes, per subtest, route trackers under a prefix of
// their own, each on an engine of its own.
func occupancyRoutes(cfg Config) occupancytest.RouteNodes {
	return func(t testing.TB) func(string) broker.OccupancyTracker {
		c := cfg
		c.Prefix = "occ" + strconv.FormatInt(occupancyPrefixes.Add(1), 10)
		var mu sync.Mutex
		return func(route string) broker.OccupancyTracker {
			mu.Lock()
			defer mu.Unlock()
			return NewRouteOccupancyTracker(newEngine(t, c), route)
		}
	}
}

// occupancyDropping makes a tracker with a backlog of its own, under a
// prefix of its own.
func occupancyDropping(cfg Config) occupancytest.DroppingNode {
	return func(t testing.TB, backlog int, log *slog.Logger) broker.OccupancyTracker {
		c := cfg
		c.Prefix = "occ" + strconv.FormatInt(occupancyPrefixes.Add(1), 10)
		c.Logger = log
		tr := NewOccupancyTracker(newEngine(t, c))
		tr.setBacklog(backlog)
		return tr
	}
}

// setBacklog sets the backlog of a tracker that has not run.
func (t *OccupancyTracker) setBacklog(n int) { t.backlog, t.backlogArg = n, strconv.Itoa(n) }

func TestOccupancy(t *testing.T) {
	for _, s := range occupancySetups() {
		t.Run(s.name, func(t *testing.T) {
			cfg := s.cfg(t)
			occupancytest.Run(t, occupancyNodes(cfg), occupancytest.Shared(), occupancytest.Routes(occupancyRoutes(cfg)),
				occupancytest.Dropping(occupancyDropping(cfg)))
		})
	}
}

func BenchmarkOccupancy(b *testing.B) {
	for _, s := range occupancySetups() {
		b.Run(s.name, func(b *testing.B) {
			occupancytest.Bench(b, occupancyNodes(s.cfg(b)))
		})
	}
}

// occupancyLog keeps the events a tracker's handler was given, the
// first of each ID, by key.
type occupancyLog struct {
	mu   sync.Mutex
	ids  map[string]bool
	keys map[string][]broker.OccupancyEvent
}

func newOccupancyLog() *occupancyLog {
	return &occupancyLog{ids: map[string]bool{}, keys: map[string][]broker.OccupancyEvent{}}
}

func (l *occupancyLog) HandleOccupancy(_ context.Context, events []broker.OccupancyEvent) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ev := range events {
		if !l.ids[ev.ID] {
			l.ids[ev.ID] = true
			l.keys[ev.Key] = append(l.keys[ev.Key], ev)
		}
	}
	return nil
}

// types returns key's events as "o" and "v" letters, in order.
func (l *occupancyLog) types(key string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, ev := range l.keys[key] {
		if ev.Occupied {
			b.WriteByte('o')
		} else {
			b.WriteByte('v')
		}
	}
	return b.String()
}

func (l *occupancyLog) waitTypes(t *testing.T, key, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for l.types(key) != want {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s events %s: %q", key, want, l.types(key))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runOccupancy returns a running tracker on cfg, logging to l.
func runOccupancy(t *testing.T, cfg Config, o broker.OccupancyOptions, l *occupancyLog) *OccupancyTracker {
	t.Helper()
	tr := NewOccupancyTracker(newEngine(t, cfg))
	t.Cleanup(func() { _ = tr.Close() })
	if err := tr.RunOccupancy(l, o); err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestOccupancyRedisRestart restarts Redis without its data: Hold and
// Release fail while it is down; once it is back the node holds its keys
// again (occupied a second time, as documented), what it held or released
// meanwhile is applied, and the keys vacate as usual.
func TestOccupancyRedisRestart(t *testing.T) {
	srv := redistest.Start(t)
	cfg := Config{Addresses: []string{srv.Addr}, Prefix: "occ", IOTimeout: 500 * time.Millisecond}
	l := newOccupancyLog()
	tr := runOccupancy(t, cfg, broker.OccupancyOptions{ChannelDelay: 100 * time.Millisecond, Lease: 3 * time.Second}, l)
	ch := broker.OccupancyChannel
	for _, k := range []string{"kept", "released"} {
		if err := tr.Hold(ch, k, nil); err != nil {
			t.Fatal(err)
		}
		l.waitTypes(t, k, "o")
	}
	srv.Kill()
	if err := tr.Release(ch, "released"); !errors.Is(err, broker.ErrNotAvailable) {
		t.Errorf("Release while Redis is down: %v, want ErrNotAvailable", err)
	}
	if err := tr.Hold(ch, "new", nil); !errors.Is(err, broker.ErrNotAvailable) {
		t.Errorf("Hold while Redis is down: %v, want ErrNotAvailable", err)
	}
	srv.Restart()
	l.waitTypes(t, "kept", "oo")
	l.waitTypes(t, "new", "o")
	for _, k := range []string{"kept", "new"} {
		if err := tr.Release(ch, k); err != nil {
			t.Fatal(err)
		}
	}
	l.waitTypes(t, "kept", "oov")
	l.waitTypes(t, "new", "ov")
	if got := l.types("released"); got != "o" {
		t.Errorf("released while Redis was down: events %q, want the occupied only (the restart lost the key)", got)
	}
}

// TestOccupancyRedisPaused makes Redis unreachable for longer than the
// lease: once it is back, the reader releases the node's keys as of the
// end of its lease, and the node, finding its lease gone, holds them
// again within the delay: no event at all.
func TestOccupancyRedisPaused(t *testing.T) {
	srv := redistest.Start(t)
	cfg := Config{Addresses: []string{srv.Addr}, Prefix: "occ", IOTimeout: 200 * time.Millisecond}
	o := broker.OccupancyOptions{ChannelDelay: 3 * time.Second, Lease: 300 * time.Millisecond}
	l := newOccupancyLog()
	tr := runOccupancy(t, cfg, o, l)
	if err := tr.Hold(broker.OccupancyChannel, "k", nil); err != nil {
		t.Fatal(err)
	}
	l.waitTypes(t, "k", "o")
	p := tr.partition(occupancyMember(broker.OccupancyChannel, "k"))
	p.mu.Lock()
	before := p.inc
	p.mu.Unlock()
	srv.Pause()
	time.Sleep(3 * o.Lease)
	srv.Resume()
	resumed := time.Now()
	eventually(t, "a new incarnation", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.ready && p.inc != before
	})
	if took := time.Since(resumed); took > o.ChannelDelay/3 {
		t.Skipf("holding again took %v after Redis came back, too close to the delay of %v", took, o.ChannelDelay)
	}
	released := time.Now()
	if err := tr.Release(broker.OccupancyChannel, "k"); err != nil {
		t.Fatal(err)
	}
	l.waitTypes(t, "k", "ov")
	l.mu.Lock()
	vacated := l.keys["k"][1].TimeMs
	l.mu.Unlock()
	if vacated < released.UnixMilli()-1 {
		t.Errorf("vacated as of %d, before the release at %d: the outage vacated the key", vacated, released.UnixMilli())
	}
}

// TestOccupancyHoldDropsDeadHolder drives the scripts in the order that
// TestOccupancyRedisPaused leaves to chance: the node's old incarnation
// still holds a key (no reader has released it) when the new one holds
// it again and then releases it. The key must vacate as of that release,
// not as of the old lease's end.
func TestOccupancyHoldDropsDeadHolder(t *testing.T) {
	srv := redistest.Start(t)
	tr := NewOccupancyTracker(newEngine(t, Config{Addresses: []string{srv.Addr}, Prefix: "occdead"}))
	t.Cleanup(func() { _ = tr.Close() })
	const m, delay = "ck", "3000"
	p := tr.parts[0]
	member := p.base + "k." + m
	ctx := context.Background()
	run := func(inc string, script *pipelinedScript, args ...string) int64 {
		t.Helper()
		keys := append(p.keys[:4:4], member, p.base+"n."+inc)
		n, err := occupancyCall{p, script, keys, append([]string{tr.epoch(), inc}, args...)}.do(ctx).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	run("old", occupancyLeaseScript, "100", "1")
	if n := run("old", occupancyHoldScript, m, "", tr.backlogArg); n != 1 {
		t.Fatalf("first hold: %d, want 1 (occupied)", n)
	}
	time.Sleep(150 * time.Millisecond) // the old lease runs out
	run("new", occupancyLeaseScript, "10000", "1")
	if n := run("new", occupancyHoldScript, m, "", tr.backlogArg); n != 0 {
		t.Fatalf("hold again: %d, want 0 (no event)", n)
	}
	released := time.Now().UnixMilli()
	run("new", occupancyReleaseScript, m, delay, tr.backlogArg)
	cl := p.client
	leftAt, err := cl.Do(ctx, cl.B().Hget().Key(member).Field("v").Build()).AsInt64()
	if err != nil {
		t.Fatalf("the release started no delay (%v): the dead holder still holds the key", err)
	}
	if leftAt < released-1 {
		t.Errorf("left as of %d, before the release at %d", leftAt, released)
	}
	if n, err := cl.Do(ctx, cl.B().Sismember().Key(p.base+"n.old").Member(m).Build()).AsInt64(); err != nil || n != 0 {
		t.Errorf("the old incarnation's set still has the member: %d, %v", n, err)
	}
}

// TestOccupancyRedisTidy: once every key is vacated and handed over, a
// partition keeps its lease, epoch and reader keys and empty streams,
// nothing else.
func TestOccupancyRedisTidy(t *testing.T) {
	srv := redistest.Start(t)
	cfg := Config{Addresses: []string{srv.Addr}, Prefix: "occ"}
	o := broker.OccupancyOptions{ChannelDelay: 50 * time.Millisecond, UserDelay: 50 * time.Millisecond, Lease: 10 * time.Second}
	// One log: either node may read a partition.
	l := newOccupancyLog()
	a, b := runOccupancy(t, cfg, o, l), runOccupancy(t, cfg, o, l)
	const keys = 200
	for i := range keys {
		k := "k" + strconv.Itoa(i)
		for _, tr := range []*OccupancyTracker{a, b} {
			if err := tr.Hold(broker.OccupancyKind(1+i%2), k, []byte("info")); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range keys {
		k := "k" + strconv.Itoa(i)
		for _, tr := range []*OccupancyTracker{a, b} {
			if err := tr.Release(broker.OccupancyKind(1+i%2), k); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range keys {
		l.waitTypes(t, "k"+strconv.Itoa(i), "ov")
	}
	c := a.e.clients[0]
	eventually(t, "the streams trimmed", func() bool {
		for _, p := range a.parts {
			n, err := c.Do(context.Background(), c.B().Xlen().Key(p.keys[2]).Build()).AsInt64()
			if err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				return false
			}
		}
		return true
	})
	left, err := c.Do(context.Background(), c.B().Keys().Pattern("occ.*").Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range left {
		if end := k[strings.LastIndexByte(k, '.')+1:]; !slices.Contains([]string{"l", "m", "r", "e"}, end) {
			t.Errorf("key %s left", k)
		}
	}
}
