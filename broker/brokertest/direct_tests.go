package brokertest

import (
	"reflect"
	"testing"

	"github.com/gyrehq/gyre/broker"
)

// Tests of broker.DirectPublisher. They need a PatternBroker too (a
// broker of one node is both): PublishManyTo hands over the pattern
// runs as well.

// directPublisher returns the broker as a broker.DirectPublisher, skipping
// the test when it is not one; call it like patternBroker.
func (e *brokerEnv) directPublisher() broker.DirectPublisher {
	e.t.Helper()
	dp, ok := e.b.(broker.DirectPublisher)
	if !ok {
		e.t.Skip("the broker does not implement broker.DirectPublisher")
	}
	return dp
}

// testPublishManyToHandler: PublishManyTo hands the publications, on the
// exact and the pattern path, to the handler passed, before it returns,
// and none to the handler given to Run; with a nil handler it publishes
// and hands nothing over.
func testPublishManyToHandler(t *testing.T, e *brokerEnv) {
	e.patternBroker()
	dp := e.directPublisher()
	scope, ch := e.scope(), e.channel()
	sc := scoped(withHistory, scope)
	other := e.recorder()
	items := []broker.PublishItem{item(ch, "direct", sc), item(ch, "direct too", withHistory)}
	dp.PublishManyTo(other, items)
	checkItems(t, items)
	// Handed over before PublishManyTo returned: no waiting.
	other.mu.Lock()
	exact, patterns := other.pubs[ch], other.patterns[ch]
	other.mu.Unlock()
	if got := deliveredData(exact); !reflect.DeepEqual(got, []string{"direct", "direct too"}) {
		t.Errorf("PublishManyTo's handler got %q when it returned, want [direct direct too]", got)
	}
	if len(patterns) != 1 || string(patterns[0].pub.Data) != "direct" || patterns[0].scope != scope || patterns[0].sp != items[0].Position {
		t.Errorf("PublishManyTo's handler got %d pattern publications when it returned, want direct in scope %q at %+v", len(patterns), scope, items[0].Position)
	}
	checkDelivered(t, other, ch, items)

	silent := []broker.PublishItem{item(ch, "to nobody", sc)}
	dp.PublishManyTo(nil, silent)
	checkItems(t, silent)
	if silent[0].Position.Offset != 3 {
		t.Errorf("PublishManyTo with a nil handler: offset %d, want 3", silent[0].Position.Offset)
	}

	// Run's handler got none of them: a publication through it comes first
	// on both paths.
	e.publish(ch, "through Run's handler", sc)
	if got := deliveredData(e.rec.waitPubs(t, ch, 1)); got[0] != "through Run's handler" {
		t.Errorf("Run's handler got %q first", got[0])
	}
	if got := patternData(e.rec.waitPatterns(t, ch, 1)); got[0] != "through Run's handler" {
		t.Errorf("Run's handler got %q first on the pattern path", got[0])
	}
	if n := other.pubCount(ch); n != 2 {
		t.Errorf("PublishManyTo's handler has %d publications, want the 2 handed to it", n)
	}
	pubs, _ := e.history(ch, broker.HistoryFilter{Limit: -1})
	checkOffsets(t, pubs, 1, 2, 3, 4)
}

// runShape is what a test expects of a handed-over run.
type runShape struct {
	channel string
	scope   string
	data    []string
}

// shapeOf returns the shape of calls, with channels and scopes named by
// their labels (unchanged when they have none).
func shapeOf(calls [][]handledRun, labels map[string]string) [][]runShape {
	label := func(name string) string {
		if l, ok := labels[name]; ok {
			return l
		}
		return name
	}
	out := make([][]runShape, 0, len(calls))
	for _, call := range calls {
		shapes := make([]runShape, 0, len(call))
		for _, hr := range call {
			shapes = append(shapes, runShape{label(hr.channel), label(hr.scope), deliveredData(hr.pubs)})
		}
		out = append(out, shapes)
	}
	return out
}

// testPublishManyToRuns: PublishManyTo hands each stretch of items of one
// channel over in one HandleRuns call, in item order: the channel's run
// first, then the pattern runs, one per stretch of items with one scope.
// Suppressed items are left out, and a stretch that has nothing left
// makes no call.
func testPublishManyToRuns(t *testing.T, e *brokerEnv) {
	e.patternBroker()
	dp := e.directPublisher()
	s1, s2 := e.scope(), e.scope()
	c1, c2 := e.channel(), e.channel()
	in := func(scope, key string) broker.PublishOptions { return keyed(scoped(withHistory, scope), key) }
	items := []broker.PublishItem{
		// A stretch of c1.
		item(c1, "a", in(s1, "k1")),
		item(c1, "b", in(s1, "")),
		item(c1, "c", in(s1, "k1")), // suppressed
		item(c1, "d", in(s1, "")),
		item(c1, "e", in(s2, "")),
		item(c1, "f", withHistory),
		// A stretch of c2.
		item(c2, "g", in(s1, "k2")),
		item(c2, "h", withHistory),
		// c1 again.
		item(c1, "i", withHistory),
		// c2 again, suppressed.
		item(c2, "j", in(s1, "k2")),
	}
	rec := e.recorder()
	dp.PublishManyTo(rec, items)
	checkItems(t, items)
	wantOffsets := []uint64{1, 2, 1, 3, 4, 5, 1, 2, 6, 1}
	for i, it := range items {
		if suppressed := i == 2 || i == 9; it.Suppressed != suppressed || it.Position.Offset != wantOffsets[i] {
			t.Errorf("item %d (%q): offset %d, suppressed %v; want %d, %v", i, it.Data, it.Position.Offset, it.Suppressed, wantOffsets[i], suppressed)
		}
	}
	want := [][]runShape{
		{{"c1", "", []string{"a", "b", "d", "e", "f"}}, {"c1", "s1", []string{"a", "b", "d"}}, {"c1", "s2", []string{"e"}}},
		{{"c2", "", []string{"g", "h"}}, {"c2", "s1", []string{"g"}}},
		{{"c1", "", []string{"i"}}},
	}
	rec.mu.Lock()
	got := shapeOf(rec.calls, map[string]string{c1: "c1", c2: "c2", s1: "s1", s2: "s2"})
	rec.mu.Unlock()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("HandleRuns calls (channel, scope, data):\n got %q\nwant %q", got, want)
	}
	checkDelivered(t, rec, c1, []broker.PublishItem{items[0], items[1], items[3], items[4], items[5], items[8]})
	checkDelivered(t, rec, c2, []broker.PublishItem{items[6], items[7]})
}
