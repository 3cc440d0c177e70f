package redis

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/gyrehq/gyre/internal/logtest"
)

func scopedHistory(scope string) broker.PublishOptions {
	opts := history
	opts.PatternScope = scope
	return opts
}

// spreadChannels returns at least n channel names that between them live
// on every Redis client of b.
func spreadChannels(b *Broker, prefix string, n int) []string {
	seen := make(map[int]bool)
	var out []string
	for i := 0; len(out) < n || len(seen) < len(b.e.clients); i++ {
		ch := prefix + strconv.Itoa(i)
		ci, _ := b.e.locate(ch)
		if len(out) < n || !seen[ci] {
			out = append(out, ch)
			seen[ci] = true
		}
	}
	return out
}

// publishConcurrently publishes each publications into every channel,
// one goroutine per channel, with data "<channel>/<i>".
func publishConcurrently(t *testing.T, b *Broker, chs []string, each int, opts broker.PublishOptions) {
	t.Helper()
	var wg sync.WaitGroup
	for _, ch := range chs {
		wg.Go(func() {
			for i := range each {
				if _, _, err := b.Publish(ch, fmt.Appendf(nil, "%s/%d", ch, i), opts); err != nil {
					t.Errorf("Publish: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// expectPatternStreams reads len(chs)*each pattern publications and checks
// that each channel's arrived complete, in offset order, in scope.
func expectPatternStreams(t *testing.T, ev *events, scope string, chs []string, each int) {
	t.Helper()
	next := make(map[string]uint64)
	for range len(chs) * each {
		d := ev.nextPattern(t)
		if d.scope != scope {
			t.Fatalf("pattern publication of %q in scope %q, want %q", d.channel, d.scope, scope)
		}
		want := next[d.channel] + 1
		if d.pub.Offset != want || string(d.pub.Data) != fmt.Sprintf("%s/%d", d.channel, want-1) {
			t.Fatalf("%s: got %q offset %d, want offset %d", d.channel, d.pub.Data, d.pub.Offset, want)
		}
		next[d.channel] = want
	}
	for _, ch := range chs {
		if next[ch] != uint64(each) {
			t.Errorf("%s: %d pattern publications, want %d", ch, next[ch], each)
		}
	}
}

// TestPatternTwoNodes: node B holds a pattern scope, node A publishes into
// channels of the scope that live on every Redis (both servers of the
// sharded setup, several masters of the cluster); B receives them all,
// each channel's in order, with the channel's name. A, which did not
// subscribe the scope, gets nothing.
func TestPatternTwoNodes(t *testing.T) {
	for _, s := range setups() {
		t.Run(s.name, func(t *testing.T) {
			cfg := s.cfg(t)
			a, evA := runBroker(t, cfg)
			b, evB := runBroker(t, cfg)
			const scope = "news:"
			if err := b.SubscribePatternScope(scope); err != nil {
				t.Fatalf("SubscribePatternScope: %v", err)
			}
			chs := spreadChannels(a, "news:", 6)
			const each = 50
			publishConcurrently(t, a, chs, each, scopedHistory(scope))
			expectPatternStreams(t, evB, scope, chs, each)

			if err := a.SubscribePatternScope(scope); err != nil {
				t.Fatalf("SubscribePatternScope on A: %v", err)
			}
			if _, _, err := a.Publish(chs[0], []byte("marker"), scopedHistory(scope)); err != nil {
				t.Fatalf("Publish: %v", err)
			}
			if d := evA.nextPattern(t); string(d.pub.Data) != "marker" {
				t.Errorf("node A, which had not subscribed the scope, got %q first", d.pub.Data)
			}
		})
	}
}

// TestPatternClusterSharded: in a cluster a scope's publications are
// SPUBLISHes in the slot of the channel's base, so the node holding the
// scope has it subscribed as a shard channel under every base, on the
// master serving the base's slot, and as no classic channel anywhere. A
// subscriber receives the publications of channels of every master, each
// channel's in order.
func TestPatternClusterSharded(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	cfg := Config{ClusterAddresses: c.Addrs(), ClusterShards: 16}
	a, _ := runBroker(t, cfg)
	b, evB := runBroker(t, cfg)
	const scope = "$news:"
	if err := b.SubscribePatternScope(scope); err != nil {
		t.Fatalf("SubscribePatternScope: %v", err)
	}
	for _, base := range b.e.bases {
		name := scopeName(base, scope)
		owner := slotNode(t, c, name)
		for _, n := range c.Nodes {
			want := "0"
			if n == owner {
				want = "1"
			}
			out, err := n.Cli("pubsub", "shardnumsub", name)
			if err != nil {
				t.Fatal(err)
			}
			if f := strings.Fields(out); len(f) != 2 || f[1] != want {
				t.Errorf("%s: PUBSUB SHARDNUMSUB %s = %q, want %s", n.Addr, name, out, want)
			}
			if out, err := n.Cli("pubsub", "channels", "*w.*"); err != nil || strings.TrimSpace(out) != "" {
				t.Errorf("%s: classic scope channels %q (%v), want none", n.Addr, out, err)
			}
		}
	}
	masters := make(map[*redistest.Server][]string)
	for i := 0; (len(masters) < len(c.Nodes) || i < 6) && i < 1000; i++ {
		ch := "news:" + strconv.Itoa(i)
		n := channelNode(t, c, a, ch)
		if len(masters[n]) < 2 {
			masters[n] = append(masters[n], ch)
		}
	}
	if len(masters) < 2 {
		t.Fatal("every channel lives on one master; the test proves nothing")
	}
	var chs []string
	for _, m := range masters {
		chs = append(chs, m...)
	}
	const each = 100
	publishConcurrently(t, a, chs, each, scopedHistory(scope))
	expectPatternStreams(t, evB, scope, chs, each)
}

// slotNode returns the cluster node that serves key's slot.
func slotNode(t *testing.T, c *redistest.Cluster, key string) *redistest.Server {
	t.Helper()
	out, err := c.Nodes[0].Cli("cluster", "keyslot", key)
	if err != nil {
		t.Fatal(err)
	}
	slot, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("CLUSTER KEYSLOT answered %q", out)
	}
	for _, n := range c.Nodes {
		if servedSlots(t, n)[slot] {
			return n
		}
	}
	t.Fatalf("no cluster node serves slot %d", slot)
	return nil
}

// channelNode returns the cluster node that serves the channel's keys.
func channelNode(t *testing.T, c *redistest.Cluster, b *Broker, ch string) *redistest.Server {
	t.Helper()
	_, si := b.e.locate(ch)
	return slotNode(t, c, metaKey(b.e.bases[si], ch))
}

// servedSlots returns the slots the cluster node serves, from CLUSTER
// NODES.
func servedSlots(t *testing.T, n *redistest.Server) map[int]bool {
	t.Helper()
	out, err := n.Cli("cluster", "nodes")
	if err != nil {
		t.Fatal(err)
	}
	slots := make(map[int]bool)
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) < 3 || !strings.Contains(f[2], "myself") {
			continue
		}
		for _, r := range f[min(8, len(f)):] {
			if strings.HasPrefix(r, "[") { // a slot being migrated
				continue
			}
			lo, hi, found := strings.Cut(r, "-")
			if !found {
				hi = lo
			}
			from, err1 := strconv.Atoi(lo)
			to, err2 := strconv.Atoi(hi)
			if err1 != nil || err2 != nil {
				t.Fatalf("CLUSTER NODES slot range %q", r)
			}
			for s := from; s <= to; s++ {
				slots[s] = true
			}
		}
	}
	if len(slots) == 0 {
		t.Fatalf("CLUSTER NODES names no slots of its node: %s", out)
	}
	return slots
}

// TestPatternScopeRefs: a scope subscribed twice needs two unsubscribes;
// unsubscribing a scope not held does nothing; an empty scope is refused.
func TestPatternScopeRefs(t *testing.T) {
	b, ev := runBroker(t, Config{Addresses: []string{redistest.Start(t).Addr}})
	const scope, ch = "refs:", "refs:a"
	publish := func(data string) {
		t.Helper()
		if _, _, err := b.Publish(ch, []byte(data), scopedHistory(scope)); err != nil {
			t.Fatalf("Publish: %v", err)
		}
	}
	for range 2 {
		if err := b.SubscribePatternScope(scope); err != nil {
			t.Fatalf("SubscribePatternScope: %v", err)
		}
	}
	if err := b.UnsubscribePatternScope(scope); err != nil {
		t.Fatalf("UnsubscribePatternScope: %v", err)
	}
	publish("still held")
	if d := ev.nextPattern(t); string(d.pub.Data) != "still held" {
		t.Fatalf("got %q, want the publication while one subscription is left", d.pub.Data)
	}
	if err := b.UnsubscribePatternScope(scope); err != nil {
		t.Fatalf("UnsubscribePatternScope: %v", err)
	}
	publish("gone")
	if err := b.SubscribePatternScope(scope); err != nil {
		t.Fatalf("SubscribePatternScope: %v", err)
	}
	publish("back")
	if d := ev.nextPattern(t); string(d.pub.Data) != "back" {
		t.Errorf("got %q after the last unsubscribe, want back", d.pub.Data)
	}
	if err := b.UnsubscribePatternScope("never:"); err != nil {
		t.Errorf("UnsubscribePatternScope of a scope not held: %v", err)
	}
	if err := b.SubscribePatternScope(""); err == nil {
		t.Error("SubscribePatternScope with an empty scope succeeded")
	}
}

// TestPatternScopeNeedsRun: a scope cannot be subscribed before Run;
// after it, any EventHandler takes the scope's runs.
func TestPatternScopeNeedsRun(t *testing.T) {
	srv := redistest.Start(t)
	idle := newEngine(t, Config{Addresses: []string{srv.Addr}}).Broker()
	if err := idle.SubscribePatternScope("x:"); err == nil {
		t.Error("SubscribePatternScope before Run succeeded")
	}
	b := newEngine(t, Config{Addresses: []string{srv.Addr}}).Broker()
	if err := b.Run(&joinRecorder{got: make(chan string, 1)}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := b.SubscribePatternScope("x:"); err != nil {
		t.Errorf("SubscribePatternScope after Run: %v", err)
	}
}

// TestPatternScriptEncoding: the publish script encodes the channel field
// of the scope's message itself; names whose length takes one to three
// varint bytes arrive intact, with the payload and a large offset, and a
// delta publish does not disturb the scope's message.
func TestPatternScriptEncoding(t *testing.T) {
	b, ev := runBroker(t, Config{Addresses: []string{redistest.Start(t).Addr}})
	const scope = "enc:"
	if err := b.SubscribePatternScope(scope); err != nil {
		t.Fatalf("SubscribePatternScope: %v", err)
	}
	for _, n := range []int{1, 127, 128, 16384} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			ch := scope + strings.Repeat("c", n)
			top := setOffset(t, b, ch, 1<<40)
			opts := scopedHistory(scope)
			opts.UseDelta = true
			payload := bytes.Repeat([]byte("p"), 300)
			for range 2 {
				if _, _, err := b.Publish(ch, payload, opts); err != nil {
					t.Fatalf("Publish: %v", err)
				}
			}
			for i := range 2 {
				d := ev.nextPattern(t)
				if d.channel != ch || d.scope != scope || !bytes.Equal(d.pub.Data, payload) || d.pub.Offset != top.Offset+uint64(i)+1 {
					t.Errorf("got channel of %d bytes, scope %q, %d bytes of data, offset %d",
						len(d.channel), d.scope, len(d.pub.Data), d.pub.Offset)
				}
			}
		})
	}
}

// patternConnID returns the CLIENT LIST id of the broker's pattern
// connection: the newest connection with subscriptions, since the broker
// makes it on the first SubscribePatternScope, after Run made the others.
func patternConnID(t *testing.T, srv *redistest.Server) string {
	t.Helper()
	out, err := srv.Cli("client", "list")
	if err != nil {
		t.Fatal(err)
	}
	best, bestID := "", -1
	for line := range strings.Lines(out) {
		var id, sub int
		var idStr string
		for _, f := range strings.Fields(line) {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "id":
				idStr = v
				id, _ = strconv.Atoi(v)
			case "sub":
				sub, _ = strconv.Atoi(v)
			}
		}
		if sub > 0 && id > bestID {
			best, bestID = idStr, id
		}
	}
	if best == "" {
		t.Fatalf("no subscribed connection in CLIENT LIST:\n%s", out)
	}
	return best
}

// waitPattern publishes into ch with the scope until a publication
// carrying data comes back on the pattern path: after an outage the first
// publishes may fail, or go out before the scope is subscribed again.
func waitPattern(t *testing.T, b *Broker, ev *events, scope, ch, data string) {
	t.Helper()
	eventually(t, "pattern publications to resume", func() bool {
		if _, _, err := b.Publish(ch, []byte(data), scopedHistory(scope)); err != nil {
			if !errors.Is(err, broker.ErrNotAvailable) {
				t.Fatalf("Publish: %v", err)
			}
			return false
		}
		timeout := time.After(200 * time.Millisecond)
		for {
			select {
			case d := <-ev.patterns:
				if string(d.pub.Data) == data {
					return true
				}
			case <-timeout:
				return false
			}
		}
	})
}

// waitScopeLost waits until scope is reported lost.
func waitScopeLost(t *testing.T, ev *events, scope string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case lost := <-ev.scopesLost:
			if slices.Contains(lost, scope) {
				return
			}
		case <-deadline:
			t.Fatalf("scope %q never reported lost", scope)
		}
	}
}

// TestPatternConnectionKilled: Redis closes the connection carrying the
// pattern scopes (CLIENT KILL). The broker subscribes the scopes again on
// a new connection and reports the scope lost, once; deliveries resume,
// and the channels' own connection, which was not touched, reports
// nothing lost.
func TestPatternConnectionKilled(t *testing.T) {
	srv := redistest.Start(t)
	logs := &logtest.Recorder{MinLevel: slog.LevelInfo}
	b, ev := runBroker(t, Config{Addresses: []string{srv.Addr}, IOTimeout: time.Second, Logger: slog.New(logs)})
	const scope, ch = "kill:", "kill:a"
	if err := b.Subscribe(ch); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	if err := b.SubscribePatternScope(scope); err != nil {
		t.Fatalf("SubscribePatternScope: %v", err)
	}
	waitPattern(t, b, ev, scope, ch, "before")

	if out, err := srv.Cli("client", "kill", "id", patternConnID(t, srv)); err != nil || out != "1" {
		t.Fatalf("CLIENT KILL: %q, %v", out, err)
	}
	waitPattern(t, b, ev, scope, ch, "after")
	eventually(t, "Healthy", func() bool { return b.Healthy() == nil })
	select {
	case lost := <-ev.lost:
		t.Errorf("channels reported lost although their connection was not touched: %v", lost)
	default:
	}
	select {
	case lost := <-ev.scopesLost:
		if !slices.Equal(lost, []string{scope}) {
			t.Errorf("scopes reported lost: %q, want %q", lost, scope)
		}
	default:
		t.Error("the scope was not reported lost")
	}
	select {
	case lost := <-ev.scopesLost:
		t.Errorf("scopes reported lost a second time: %q", lost)
	default:
	}
	if n := len(logs.Find(slog.LevelWarn, "redis: pub/sub connection lost, resubscribing", nil)); n != 1 {
		t.Errorf("%d warnings of the lost connection, want 1", n)
	}
}

// TestPatternRedisRestart: while Redis is down a new scope cannot be
// subscribed (broker.ErrNotAvailable) and Healthy reports the pattern
// connection; once Redis is back the scopes held are subscribed again,
// reported lost as scopes (never as lost channels) and delivered.
func TestPatternRedisRestart(t *testing.T) {
	srv := redistest.Start(t)
	b, ev := runBroker(t, Config{Addresses: []string{srv.Addr}, IOTimeout: time.Second})
	const scope, ch = "restart:", "restart:a"
	if err := b.SubscribePatternScope(scope); err != nil {
		t.Fatalf("SubscribePatternScope: %v", err)
	}
	waitPattern(t, b, ev, scope, ch, "before")

	srv.Kill()
	eventually(t, "Healthy to report the outage", func() bool {
		err := b.Healthy()
		return err != nil && strings.Contains(err.Error(), "patterns")
	})
	if err := b.SubscribePatternScope("other:"); !errors.Is(err, broker.ErrNotAvailable) {
		t.Errorf("SubscribePatternScope while down: %v, want ErrNotAvailable", err)
	}
	srv.Restart()
	eventually(t, "Healthy after the restart", func() bool { return b.Healthy() == nil })
	waitScopeLost(t, ev, scope)
	waitPattern(t, b, ev, scope, ch, "after")
	for {
		select {
		case lost := <-ev.lost:
			for _, name := range lost {
				if strings.Contains(name, scope) {
					t.Errorf("scope reported as a lost channel: %q", name)
				}
			}
			continue
		default:
		}
		break
	}
}

// TestPatternClusterNodeRestart: the master serving a channel's slot
// dies and comes back. Healthy reports the pattern connection of that
// channel's base while the master is down; once it is back the broker
// subscribes the scope again there, reports it lost, and deliveries
// resume.
func TestPatternClusterNodeRestart(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	b, ev := runBroker(t, Config{ClusterAddresses: c.Addrs(), ClusterShards: 8, IOTimeout: time.Second})
	const scope, ch = "node:", "node:a"
	if err := b.SubscribePatternScope(scope); err != nil {
		t.Fatalf("SubscribePatternScope: %v", err)
	}
	waitPattern(t, b, ev, scope, ch, "before")
	owner := channelNode(t, c, b, ch)
	owner.Kill()
	eventually(t, "Healthy to report the pattern connection", func() bool {
		err := b.Healthy()
		return err != nil && strings.Contains(err.Error(), "patterns")
	})
	owner.Restart()
	eventually(t, "Healthy after the node is back", func() bool { return b.Healthy() == nil })
	waitScopeLost(t, ev, scope)
	waitPattern(t, b, ev, scope, ch, "after")
}
