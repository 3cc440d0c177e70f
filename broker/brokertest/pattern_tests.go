package brokertest

import (
	"bytes"
	"maps"
	"reflect"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
)

// Tests of pattern delivery (broker.PatternBroker): runs with Run.Scope
// set, handed to the handler given to Run.

// patternBroker returns the broker as a broker.PatternBroker, skipping
// the test when it is not one. Call it first in the test's own goroutine:
// a skip from a nested subtest's goroutine would be misplaced.
func (e *brokerEnv) patternBroker() broker.PatternBroker {
	e.t.Helper()
	pb, ok := e.b.(broker.PatternBroker)
	if !ok {
		e.t.Skip("the broker does not implement broker.PatternBroker")
	}
	if _, ok := pb.(broker.PatternFilterBroker); ok {
		e.t.Skip("the broker subscribes patterns one by one: RunPatternFilterTests")
	}
	return pb
}

// scope returns a fresh pattern scope this node subscribed. A scope is
// opaque to a broker; this one carries characters that are special to
// Redis PSUBSCRIBE (glob) and to cluster hash tags, and non-ASCII.
func (e *brokerEnv) scope() string {
	e.t.Helper()
	s := uniqueChannel(e.t) + ":*?[a]{b} é:"
	e.subscribeScope(s)
	return s
}

func (e *brokerEnv) subscribeScope(scope string) {
	e.t.Helper()
	if err := e.b.(broker.PatternBroker).SubscribePatternScope(scope); err != nil {
		e.t.Fatalf("SubscribePatternScope(%q): %v", scope, err)
	}
}

// scoped returns opts with the pattern scope set.
func scoped(opts broker.PublishOptions, scope string) broker.PublishOptions {
	opts.PatternScope = scope
	return opts
}

func patternData(ps []patternDelivery) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, string(p.pub.Data))
	}
	return out
}

// checkScopes fails the test unless every delivery names scope.
func checkScopes(t testing.TB, ps []patternDelivery, scope string) {
	t.Helper()
	for i, p := range ps {
		if p.scope != scope {
			t.Errorf("pattern delivery %d (%q) has scope %q, want %q", i, p.pub.Data, p.scope, scope)
		}
	}
}

// testPatternFields: a publication with a pattern scope reaches the
// pattern path with its scope, channel, data, tags, client info, time and
// position, and still reaches the exact path once.
func testPatternFields(t *testing.T, e *brokerEnv) {
	e.patternBroker()
	for _, tt := range []struct {
		name string
		opts broker.PublishOptions
	}{
		{"WithHistory", withHistory},
		{"WithoutHistory", broker.PublishOptions{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			scope, ch := e.scope(), e.channel()
			info := &broker.ClientInfo{ClientID: "c1", UserID: "u1", ConnInfo: []byte(`{"a":1}`), ChanInfo: []byte(`{"b":2}`)}
			opts := scoped(tt.opts, scope)
			opts.ClientInfo = info
			opts.Tags = map[string]string{"k": "v", "n": "1"}
			before := time.Now().UnixMilli()
			sps := []broker.StreamPosition{e.publish(ch, "one", opts), e.publish(ch, "two", opts)}
			after := time.Now().UnixMilli()

			ps := e.rec.waitPatterns(t, ch, 2)
			checkScopes(t, ps, scope)
			for i, want := range []string{"one", "two"} {
				p := ps[i].pub
				if string(p.Data) != want || !maps.Equal(p.Tags, opts.Tags) || p.Offset != sps[i].Offset || ps[i].sp != sps[i] {
					t.Errorf("pattern delivery %d: data %q tags %v offset %d position %+v; want %q, %v, offset and position %+v",
						i, p.Data, p.Tags, p.Offset, ps[i].sp, want, opts.Tags, sps[i])
				}
				if p.Info == nil || p.Info.ClientID != "c1" || p.Info.UserID != "u1" ||
					!bytes.Equal(p.Info.ConnInfo, info.ConnInfo) || !bytes.Equal(p.Info.ChanInfo, info.ChanInfo) {
					t.Errorf("pattern delivery %d: info %+v, want %+v", i, p.Info, info)
				}
				if p.Time < before || p.Time > after {
					t.Errorf("pattern delivery %d: time %d outside the publish calls [%d, %d]", i, p.Time, before, after)
				}
			}
			// The exact path got each publication once, before a marker
			// published after them.
			e.publish(ch, "marker", tt.opts)
			if got := deliveredData(e.rec.waitPubs(t, ch, 3)); !reflect.DeepEqual(got, []string{"one", "two", "marker"}) {
				t.Errorf("exact path delivered %q, want [one two marker]", got)
			}
		})
	}
}

// testPatternWithoutExactSubscription: a node that holds only a pattern
// scope, not the channel, receives the channel's publications of that
// scope.
func testPatternWithoutExactSubscription(t *testing.T, e *brokerEnv) {
	e.patternBroker()
	scope, ch := e.scope(), uniqueChannel(t)
	for _, d := range []string{"a", "b", "c"} {
		e.publish(ch, d, scoped(withHistory, scope))
	}
	ps := e.rec.waitPatterns(t, ch, 3)
	checkScopes(t, ps, scope)
	if got := patternData(ps); !reflect.DeepEqual(got, []string{"a", "b", "c"}) {
		t.Errorf("pattern path delivered %q, want [a b c]", got)
	}
	for i, p := range ps {
		if p.pub.Offset != uint64(i+1) {
			t.Errorf("pattern delivery %d has offset %d, want %d", i, p.pub.Offset, i+1)
		}
	}
}

// testPatternOnlyWithScope: publications without a pattern scope do not
// reach the pattern path; publications of the same channel with the
// scope, published after them, prove it.
func testPatternOnlyWithScope(t *testing.T, e *brokerEnv) {
	e.patternBroker()
	scope, ch := e.scope(), e.channel()
	e.publish(ch, "plain", withHistory)
	e.publish(ch, "marker1", scoped(withHistory, scope))
	e.publish(ch, "plain2", withHistory)
	e.publish(ch, "marker2", scoped(withHistory, scope))
	if got := deliveredData(e.rec.waitPubs(t, ch, 4)); !reflect.DeepEqual(got, []string{"plain", "marker1", "plain2", "marker2"}) {
		t.Errorf("exact path delivered %q", got)
	}
	ps := e.rec.waitPatterns(t, ch, 2)
	if got := patternData(ps); !reflect.DeepEqual(got, []string{"marker1", "marker2"}) {
		t.Errorf("pattern path delivered %q, want [marker1 marker2]", got)
	}
	if ps[0].pub.Offset != 2 || ps[1].pub.Offset != 4 {
		t.Errorf("pattern deliveries have offsets %d, %d; want 2, 4", ps[0].pub.Offset, ps[1].pub.Offset)
	}
}

// testPatternOrderConcurrentPublishers: goroutines publishing into a few
// channels of one scope; on the pattern path each channel's publications
// arrive complete, in offset order, each publisher's in its order, and
// never concurrently.
func testPatternOrderConcurrentPublishers(t *testing.T, e *brokerEnv) {
	e.patternBroker()
	scope := e.scope()
	const channels, publishers, each = 3, 4, 100
	chs := make([]string, channels)
	for i := range chs {
		chs[i] = uniqueChannel(t)
	}
	opts := scoped(withHistory, scope)
	publishConcurrently(t, e.streamEnv, chs, publishers, each, opts)
	for _, ch := range chs {
		ps := e.rec.waitPatterns(t, ch, publishers*each)
		checkScopes(t, ps, scope)
		order := publisherOrder{}
		for i, d := range ps {
			if d.pub.Offset != uint64(i+1) {
				t.Fatalf("%s: pattern delivery %d has offset %d", ch, i, d.pub.Offset)
			}
			order.Check(t, ch, d.pub.Data)
		}
		if n := e.rec.patternOverlapCount(ch); n != 0 {
			t.Errorf("%s: %d HandleRuns calls with pattern runs of the channel began while another was in the handler", ch, n)
		}
	}
}

// testPatternUnsubscribe: after UnsubscribePatternScope the scope's
// publications stop, and after SubscribePatternScope again they come
// back. A broker declared with ScopesAlwaysDelivered keeps delivering.
func testPatternUnsubscribe(t *testing.T, e *brokerEnv) {
	pb := e.patternBroker()
	scope, ch := e.scope(), uniqueChannel(t)
	opts := scoped(withHistory, scope)
	e.publish(ch, "before", opts)
	e.rec.waitPatterns(t, ch, 1)
	if err := pb.UnsubscribePatternScope(scope); err != nil {
		t.Fatalf("UnsubscribePatternScope: %v", err)
	}
	e.publish(ch, "while unsubscribed", opts)
	e.subscribeScope(scope)
	e.publish(ch, "after", opts)
	want := []string{"before", "after"}
	if e.opts.scopesAlwaysDelivered {
		want = []string{"before", "while unsubscribed", "after"}
	}
	ps := e.rec.waitPatterns(t, ch, len(want))
	checkScopes(t, ps, scope)
	if got := patternData(ps); !reflect.DeepEqual(got, want) {
		t.Errorf("pattern path delivered %q, want %q", got, want)
	}
}

// testPatternScopesIsolated: publications arrive with the scope they were
// published with, once, even when one subscribed scope is a prefix of
// another; a scope never subscribed is not delivered (unless the broker
// declared ScopesAlwaysDelivered).
func testPatternScopesIsolated(t *testing.T, e *brokerEnv) {
	e.patternBroker()
	s1 := e.scope()
	s2 := s1 + "sub:"
	e.subscribeScope(s2)
	s3 := uniqueChannel(t) + ":never subscribed:"
	c1, c2, c3 := uniqueChannel(t), uniqueChannel(t), uniqueChannel(t)
	e.publish(c3, "hidden", scoped(withHistory, s3))
	e.publish(c1, "one", scoped(withHistory, s1))
	e.publish(c2, "two", scoped(withHistory, s2))
	e.publish(c3, "marker", scoped(withHistory, s1))
	e.publish(c1, "one again", scoped(withHistory, s1))
	e.publish(c2, "two again", scoped(withHistory, s2))

	for _, tt := range []struct {
		ch    string
		scope string
		want  []string
	}{
		{c1, s1, []string{"one", "one again"}},
		{c2, s2, []string{"two", "two again"}},
	} {
		ps := e.rec.waitPatterns(t, tt.ch, 2)
		checkScopes(t, ps, tt.scope)
		if got := patternData(ps); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("scope %q delivered %q, want %q", tt.scope, got, tt.want)
		}
	}
	want := []patternDelivery{{scope: s1, pub: broker.Publication{Data: []byte("marker")}}}
	if e.opts.scopesAlwaysDelivered {
		want = append([]patternDelivery{{scope: s3, pub: broker.Publication{Data: []byte("hidden")}}}, want...)
	}
	ps := e.rec.waitPatterns(t, c3, len(want))
	for i := range want {
		if ps[i].scope != want[i].scope || !bytes.Equal(ps[i].pub.Data, want[i].pub.Data) {
			t.Errorf("%s: pattern delivery %d is %q in scope %q, want %q in scope %q",
				c3, i, ps[i].pub.Data, ps[i].scope, want[i].pub.Data, want[i].scope)
		}
	}
}

// testPatternSuppressed: a publish suppressed by its idempotency key
// reaches the pattern path no more than the exact one.
func testPatternSuppressed(t *testing.T, e *brokerEnv) {
	e.patternBroker()
	for _, tt := range []struct {
		name string
		opts broker.PublishOptions
	}{
		{"WithHistory", withHistory},
		{"WithoutHistory", broker.PublishOptions{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			scope, ch := e.scope(), uniqueChannel(t)
			keyed := func(key string) broker.PublishOptions {
				o := scoped(tt.opts, scope)
				o.IdempotencyKey = key
				return o
			}
			e.publish(ch, "a", keyed("k1"))
			if _, suppressed, err := e.b.Publish(ch, []byte("b"), keyed("k1")); err != nil || !suppressed {
				t.Fatalf("repeated key: suppressed %v, error %v; want true, nil", suppressed, err)
			}
			e.publish(ch, "c", keyed("k2"))
			if got := patternData(e.rec.waitPatterns(t, ch, 2)); !reflect.DeepEqual(got, []string{"a", "c"}) {
				t.Errorf("pattern path delivered %q, want [a c]", got)
			}
		})
	}
}
