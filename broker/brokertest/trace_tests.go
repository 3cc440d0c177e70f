package brokertest

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/gyrehq/gyre/broker"
)

// Tests of PublishOptions.Trace: it reaches the handler with the
// publication, on every path and node, and is never stored.

// testTrace returns a trace context of the usual size (25 bytes) that
// differs with seed.
func testTrace(seed byte) []byte {
	tc := make([]byte, 25)
	for i := range tc {
		tc[i] = seed + byte(i)
	}
	return tc
}

// traced returns opts with Trace set to tc.
func traced(opts broker.PublishOptions, tc []byte) broker.PublishOptions {
	opts.Trace = tc
	return opts
}

// checkTrace fails the test unless the publication what carries want
// (nil: none).
func checkTrace(t testing.TB, what string, p *broker.Publication, want []byte) {
	t.Helper()
	switch {
	case want == nil && p.Trace != nil:
		t.Errorf("%s (%q) carries trace %x, want none", what, p.Data, p.Trace)
	case !bytes.Equal(p.Trace, want):
		t.Errorf("%s (%q) carries trace %x, want %x", what, p.Data, p.Trace, want)
	}
}

// testTraceDelivered: a publication's Trace reaches the handler as
// published, a copy of the caller's bytes; one published without it
// arrives without; and the delta base handed over with a publication
// carries none (it comes from what the broker keeps).
func testTraceDelivered(t *testing.T, e *brokerEnv) {
	eachHistory(t, func(t *testing.T, opts broker.PublishOptions) {
		e.skipUnlessStreams(t, opts)
		ch := e.channel()
		tc := testTrace(1)
		in := bytes.Clone(tc)
		e.publish(ch, "traced", traced(opts, in))
		clear(in) // the broker must have taken a copy
		e.publish(ch, "plain", opts)
		ds := e.rec.waitPubs(t, ch, 2)
		checkTrace(t, "delivery 0", &ds[0].pub, tc)
		checkTrace(t, "delivery 1", &ds[1].pub, nil)
	})
	t.Run("Delta", func(t *testing.T) {
		e.skipUnlessStreams(t, withHistory) // the delta base is kept with the stream's meta
		ch := e.channel()
		delta := traced(withHistory, testTrace(2))
		delta.UseDelta = true
		e.publish(ch, "one", delta)
		e.publish(ch, "two", delta)
		ds := e.rec.waitPubs(t, ch, 2)
		for i, d := range ds {
			checkTrace(t, fmt.Sprint("delivery ", i), &d.pub, delta.Trace)
			if d.prev != nil {
				checkTrace(t, fmt.Sprint("prev of delivery ", i), d.prev, nil)
			}
		}
	})
}

// testTracePublishMany: each item of a PublishMany keeps its own Trace,
// or none, across stretches of channels.
func testTracePublishMany(t *testing.T, e *brokerEnv) {
	eachHistory(t, func(t *testing.T, opts broker.PublishOptions) {
		e.skipUnlessStreams(t, opts)
		c1, c2 := e.channel(), e.channel()
		traces := [][]byte{testTrace(10), nil, testTrace(20), testTrace(30), nil, testTrace(40)}
		chs := []string{c1, c1, c1, c2, c2, c1}
		items := make([]broker.PublishItem, len(traces))
		for i := range items {
			items[i] = item(chs[i], fmt.Sprint(i), traced(opts, traces[i]))
		}
		publishMany(t, e.b, items)
		for _, ch := range []string{c1, c2} {
			var want [][]byte
			for i := range chs {
				if chs[i] == ch {
					want = append(want, traces[i])
				}
			}
			for i, d := range e.rec.waitPubs(t, ch, len(want)) {
				checkTrace(t, fmt.Sprintf("%s: delivery %d", ch, i), &d.pub, want[i])
			}
		}
	})
}

// testTracePattern: a publication with a pattern scope carries its Trace
// on the pattern path as on the exact one.
func testTracePattern(t *testing.T, e *brokerEnv) {
	e.patternBroker()
	eachHistory(t, func(t *testing.T, opts broker.PublishOptions) {
		e.skipUnlessStreams(t, opts)
		scope, ch := e.scope(), e.channel()
		tc := testTrace(50)
		e.publish(ch, "traced", scoped(traced(opts, tc), scope))
		e.publish(ch, "plain", scoped(opts, scope))
		ps := e.rec.waitPatterns(t, ch, 2)
		checkScopes(t, ps, scope)
		checkTrace(t, "pattern delivery 0", &ps[0].pub, tc)
		checkTrace(t, "pattern delivery 1", &ps[1].pub, nil)
		ds := e.rec.waitPubs(t, ch, 2)
		checkTrace(t, "delivery 0", &ds[0].pub, tc)
		checkTrace(t, "delivery 1", &ds[1].pub, nil)
	})
}

// testTraceOtherNode: a traced publication reaches another node's handler
// with its Trace, on the exact path and (for a PatternBroker that takes
// whole scopes) the pattern path, as it reaches the publishing node's.
func testTraceOtherNode(t *testing.T, e *brokerEnv) {
	if !e.opts.cluster {
		t.Skip("the broker's nodes share nothing (no Cluster option)")
	}
	other := e.newBroker(t)
	rec := e.recorder()
	if err := other.Run(rec); err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Cleanup(func() {
		if err := other.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	pb, patterns := other.(broker.PatternBroker)
	if _, filter := other.(broker.PatternFilterBroker); filter {
		patterns = false // its patterns are tested with the broker's own tests
	}
	eachHistory(t, func(t *testing.T, opts broker.PublishOptions) {
		e.skipUnlessStreams(t, opts)
		ch := e.channel()
		if err := other.Subscribe(ch); err != nil {
			t.Fatalf("Subscribe(%q) on the other node: %v", ch, err)
		}
		if patterns {
			scope := uniqueChannel(t) + ":"
			if err := pb.SubscribePatternScope(scope); err != nil {
				t.Fatalf("SubscribePatternScope(%q) on the other node: %v", scope, err)
			}
			opts = scoped(opts, scope)
		}
		tc := testTrace(60)
		e.publish(ch, "traced", traced(opts, tc))
		e.publish(ch, "plain", opts)
		for _, r := range []struct {
			node string
			rec  *recorder
		}{{"publishing node", e.rec}, {"other node", rec}} {
			ds := r.rec.waitPubs(t, ch, 2)
			checkTrace(t, r.node+": delivery 0", &ds[0].pub, tc)
			checkTrace(t, r.node+": delivery 1", &ds[1].pub, nil)
		}
		if patterns {
			ps := rec.waitPatterns(t, ch, 2)
			checkTrace(t, "other node: pattern delivery 0", &ps[0].pub, tc)
			checkTrace(t, "other node: pattern delivery 1", &ps[1].pub, nil)
		}
	})
}

// testTraceNotStored: History returns the publications without the Trace
// they were published or appended with, one at a time or in a batch.
func testTraceNotStored(t *testing.T, e *streamEnv) {
	ch := e.channel()
	e.publish(ch, "one", traced(withHistory, testTrace(70)))
	items := []broker.PublishItem{
		item(ch, "two", traced(withHistory, testTrace(80))),
		item(ch, "three", withHistory),
	}
	e.publishMany(items)
	checkItems(t, items)
	pubs, _ := e.history(ch, broker.HistoryFilter{Limit: -1})
	if len(pubs) != 3 {
		t.Fatalf("history has %d publications, want 3", len(pubs))
	}
	for i, p := range pubs {
		checkTrace(t, fmt.Sprint("history publication ", i), p, nil)
	}
	pubs, _ = e.history(ch, broker.HistoryFilter{Limit: -1, Reverse: true})
	for i, p := range pubs {
		checkTrace(t, fmt.Sprint("reversed history publication ", i), p, nil)
	}
}
