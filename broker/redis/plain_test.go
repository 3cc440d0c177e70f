package redis

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/redis/redistest"
	"github.com/redis/rueidis"
)

// Tests of plain items: publications the publish script would only send
// (PublishMany), which go out as PUBLISH instead.

// subscribeRaw subscribes a connection of its own to the pub/sub
// channels names on srv and returns what it receives.
func subscribeRaw(t *testing.T, srv *redistest.Server, names ...string) <-chan rueidis.PubSubMessage {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}, DisableCache: true})
	if err != nil {
		t.Fatalf("rueidis: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan rueidis.PubSubMessage, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.Receive(ctx, c.B().Subscribe().Channel(names...).Build(), func(m rueidis.PubSubMessage) { out <- m })
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		c.Close()
	})
	eventually(t, "the raw subscription", func() bool {
		args := append([]string{"pubsub", "numsub"}, names...)
		reply, err := srv.Cli(args...)
		if err != nil {
			t.Fatalf("PUBSUB NUMSUB: %v", err)
		}
		lines := strings.Fields(reply)
		for i := 1; i < len(lines); i += 2 {
			if lines[i] != "1" {
				return false
			}
		}
		return len(lines) == 2*len(names)
	})
	return out
}

// TestPlainMessageAsScript: a plain item's PUBLISH sends the bytes the
// publish script sends for the same item, to the channel and to its
// pattern scope, with and without a trace.
func TestPlainMessageAsScript(t *testing.T) {
	srv := redistest.Start(t)
	b, _ := runBroker(t, Config{Addresses: []string{srv.Addr}})
	const ch, scope = "plainwire", "plainwire:"
	base := b.e.bases[0]
	pubsub, scopePubSub := base+pubsubInfix+ch, scopeName(base, scope)
	received := subscribeRaw(t, srv, pubsub, scopePubSub)
	info := &broker.ClientInfo{ClientID: "c", UserID: "u", ConnInfo: []byte(`{"a":1}`), ChanInfo: []byte(`{"b":2}`)}
	trace := make([]byte, 25)
	for i := range trace {
		trace[i] = byte(200 + i)
	}
	for _, tc := range [][]byte{nil, trace} {
		opts := broker.PublishOptions{NoDelta: true, PatternScope: scope, Trace: tc, Tags: map[string]string{"k": "v"}, ClientInfo: info}
		items := []broker.PublishItem{{Channel: ch, Data: []byte("payload"), Opts: opts}, {Channel: ch, Data: []byte("payload"), Opts: opts}}
		calls := []publishCall{{item: &items[0], plain: true}, {item: &items[1]}}
		enc := encoder{now: time.Now().UnixMilli()}
		for i := range calls {
			if err := b.prepare(&calls[i], &enc); err != nil {
				t.Fatalf("prepare: %v", err)
			}
		}
		b.runCalls(t.Context(), 0, calls)
		for i, it := range items {
			if it.Err != nil || it.Position != (broker.StreamPosition{}) || it.Suppressed {
				t.Fatalf("item %d: %+v, suppressed %v, error %v; want the zero position", i, it.Position, it.Suppressed, it.Err)
			}
		}
		got := make(map[string][]string)
		for range 4 {
			select {
			case m := <-received:
				got[m.Channel] = append(got[m.Channel], m.Message)
			case <-time.After(20 * time.Second):
				t.Fatalf("trace %x: gave up waiting for the messages; got %d", tc, len(got))
			}
		}
		for _, name := range []string{pubsub, scopePubSub} {
			if m := got[name]; len(m) != 2 || m[0] != m[1] {
				t.Errorf("trace %x, %s: PUBLISH sent %x, the script %x", tc, name, m[0], m[1:])
			}
		}
	}
}

// commandCalls returns the calls of each command since the last CONFIG
// RESETSTAT (INFO commandstats).
func commandCalls(t *testing.T, srv *redistest.Server) map[string]int {
	t.Helper()
	out, err := srv.Cli("info", "commandstats")
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	calls := make(map[string]int)
	for line := range strings.Lines(out) {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok {
			continue
		}
		n, _, _ := strings.Cut(rest, ",")
		calls[strings.TrimPrefix(name, "cmdstat_")], _ = strconv.Atoi(n)
	}
	return calls
}

// TestPlainItemsSkipScript: only items the script would only send go out
// as PUBLISH: no history, no idempotency key, no delta, in a channel that
// takes none, and not after an item of their channel that ran the
// script in the same call.
func TestPlainItemsSkipScript(t *testing.T) {
	srv := redistest.Start(t)
	b, _ := runBroker(t, Config{Addresses: []string{srv.Addr}})
	plain := broker.PublishOptions{NoDelta: true}
	with := func(f func(o *broker.PublishOptions)) broker.PublishOptions {
		o := plain
		f(&o)
		return o
	}
	// The script loaded, so that each call of it is one EVALSHA.
	if _, _, err := b.Publish("p0", nil, history); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	for _, tt := range []struct {
		name    string
		items   []broker.PublishItem
		scripts int // items that run the script
		grouped int // items sent in one PUBLISH with others (group.go)
	}{
		{"Plain", []broker.PublishItem{{Channel: "p1", Opts: plain}, {Channel: "p2", Opts: plain}}, 0, 2},
		{"PatternScope", []broker.PublishItem{{Channel: "p1", Opts: with(func(o *broker.PublishOptions) { o.PatternScope = "p" })}}, 0, 0},
		{"VersionWithoutHistory", []broker.PublishItem{{Channel: "p1", Opts: with(func(o *broker.PublishOptions) { o.Version = 3 })}}, 0, 0},
		{"MayHaveDeltaBase", []broker.PublishItem{{Channel: "p1"}}, 1, 0},
		{"History", []broker.PublishItem{{Channel: "p1", Opts: with(func(o *broker.PublishOptions) { o.HistorySize, o.HistoryTTL = 10, time.Minute })}}, 1, 0},
		{"IdempotencyKey", []broker.PublishItem{{Channel: "p1", Opts: with(func(o *broker.PublishOptions) { o.IdempotencyKey = "k" })}}, 1, 0},
		{"Delta", []broker.PublishItem{{Channel: "p1", Opts: with(func(o *broker.PublishOptions) { o.UseDelta = true })}}, 1, 0},
		{"AfterScriptOfChannel", []broker.PublishItem{
			{Channel: "p1", Opts: plain},
			{Channel: "p1", Opts: history},
			{Channel: "p1", Opts: plain},
			{Channel: "p2", Opts: plain},
		}, 2, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := srv.Cli("config", "resetstat"); err != nil {
				t.Fatal(err)
			}
			b.PublishMany(tt.items)
			for i, it := range tt.items {
				if it.Err != nil {
					t.Fatalf("item %d: %v", i, it.Err)
				}
			}
			// The script's own PUBLISH counts too: one per item, two
			// with a pattern scope.
			calls := commandCalls(t, srv)
			publish := len(tt.items) + strings.Count(tt.name, "PatternScope")
			if tt.grouped > 0 {
				publish -= tt.grouped - 1
			}
			if calls["evalsha"] != tt.scripts || calls["eval"] != 0 || calls["publish"] != publish {
				t.Errorf("the script ran %d times (EVAL %d), PUBLISH %d times; want %d, 0, %d",
					calls["evalsha"], calls["eval"], calls["publish"], tt.scripts, publish)
			}
		})
	}
}

// TestPublishManyAfterScriptFlushPlain: after SCRIPT FLUSH, a PublishMany
// whose channel has a plain item after one that runs the script keeps the
// channel's order: the plain item runs the script too, so both meet
// NOSCRIPT and go again in order, and plain items of other channels go
// out once.
func TestPublishManyAfterScriptFlushPlain(t *testing.T) {
	srv := redistest.Start(t)
	b, ev := runBroker(t, Config{Addresses: []string{srv.Addr}})
	const c1, c2 = "flushplain1", "flushplain2"
	for _, ch := range []string{c1, c2} {
		if err := b.Subscribe(ch); err != nil {
			t.Fatalf("Subscribe: %v", err)
		}
	}
	if _, err := srv.Cli("script", "flush"); err != nil {
		t.Fatal(err)
	}
	plain := broker.PublishOptions{NoDelta: true}
	item := func(ch, data string, opts broker.PublishOptions) broker.PublishItem {
		return broker.PublishItem{Channel: ch, Data: []byte(data), Opts: opts}
	}
	items := []broker.PublishItem{
		item(c1, "a", plain),
		item(c2, "b", plain),
		item(c1, "c", history),
		item(c1, "d", plain),
		item(c2, "e", plain),
		item(c1, "f", history),
	}
	b.PublishMany(items)
	for i, it := range items {
		want := uint64(0)
		switch i {
		case 2:
			want = 1
		case 5:
			want = 2
		}
		if it.Err != nil || it.Position.Offset != want {
			t.Errorf("item %d (%s): offset %d, error %v; want %d", i, it.Data, it.Position.Offset, it.Err, want)
		}
	}
	got := collect(t, ev, len(items))
	for ch, want := range map[string][]string{c1: {"a", "c", "d", "f"}, c2: {"b", "e"}} {
		if !slices.Equal(got[ch], want) {
			t.Errorf("%s: delivered %q, want %q", ch, got[ch], want)
		}
	}
}
