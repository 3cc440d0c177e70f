package brokertest

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
)

// Tests of Broker.PublishMany.

// item is a PublishItem of ch carrying data.
func item(ch, data string, opts broker.PublishOptions) broker.PublishItem {
	return broker.PublishItem{Channel: ch, Data: []byte(data), Opts: opts}
}

// keyed returns opts with the idempotency key set.
func keyed(opts broker.PublishOptions, key string) broker.PublishOptions {
	opts.IdempotencyKey = key
	return opts
}

// publishMany publishes items with b.PublishMany and fails the test on
// any item's error.
func publishMany(t testing.TB, b broker.Broker, items []broker.PublishItem) {
	t.Helper()
	b.PublishMany(items)
	checkItems(t, items)
}

// checkItems fails the test if an item has an error.
func checkItems(t testing.TB, items []broker.PublishItem) {
	t.Helper()
	for i, it := range items {
		if it.Err != nil {
			t.Fatalf("item %d (%q on %s): %v", i, it.Data, it.Channel, it.Err)
		}
	}
}

// itemsOf returns the items of channel ch, in order.
func itemsOf(items []broker.PublishItem, ch string) []broker.PublishItem {
	var out []broker.PublishItem
	for _, it := range items {
		if it.Channel == ch {
			out = append(out, it)
		}
	}
	return out
}

func itemData(items []broker.PublishItem) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, string(it.Data))
	}
	return out
}

// checkDelivered waits for len(want) deliveries on ch in r and fails the
// test unless they carry the data and positions of want, in order.
func checkDelivered(t *testing.T, r *recorder, ch string, want []broker.PublishItem) {
	t.Helper()
	ds := r.waitPubs(t, ch, len(want))
	if got := deliveredData(ds); !reflect.DeepEqual(got, itemData(want)) {
		t.Fatalf("%s: delivered %q, want %q", ch, got, itemData(want))
	}
	for i, d := range ds {
		if d.sp != want[i].Position || d.pub.Offset != want[i].Position.Offset {
			t.Errorf("%s: delivery %d (%q) has position %+v, publication offset %d; PublishMany set %+v",
				ch, i, d.pub.Data, d.sp, d.pub.Offset, want[i].Position)
		}
	}
}

// checkNothingMore publishes a marker into ch and fails the test unless
// it is the next delivery after the n already seen.
func (e *brokerEnv) checkNothingMore(ch string, n int, opts broker.PublishOptions) {
	e.t.Helper()
	e.publish(ch, "marker", opts)
	if d := e.rec.waitPubs(e.t, ch, n+1)[n]; string(d.pub.Data) != "marker" {
		e.t.Errorf("%s: delivery %d is %q, want the marker published after the rest", ch, n, d.pub.Data)
	}
}

// testPublishManyResults: PublishMany sets each item's result (see
// publishManyResults), and delivers the items not suppressed, in order.
func testPublishManyResults(t *testing.T, e *brokerEnv) {
	published := publishManyResults(t, e.streamEnv)
	for _, ch := range slices.Sorted(maps.Keys(published)) {
		checkDelivered(t, e.rec, ch, published[ch])
		e.checkNothingMore(ch, len(published[ch]), broker.PublishOptions{})
	}
}

// publishManyResults checks the results PublishMany (or Append) sets in
// items: offsets that follow each other per channel, in one epoch per
// channel, whatever the items of other channels in between; offset 0
// without history; a key repeated inside one call or across calls reports
// the first position, suppressed, and stores nothing. Results left in the
// items by an earlier call are replaced. An empty call does nothing. It
// returns, per channel, the items not suppressed, in order.
func publishManyResults(t *testing.T, e *streamEnv) map[string][]broker.PublishItem {
	t.Helper()
	e.needStreams(withHistory)
	e.publishMany(nil)
	e.publishMany([]broker.PublishItem{})
	a, b, n := e.channel(), e.channel(), e.channel()
	none := broker.PublishOptions{}
	type result struct {
		offset     uint64
		suppressed bool
	}
	first := []broker.PublishItem{
		item(a, "a1", keyed(withHistory, "ka")),
		item(b, "b1", withHistory),
		item(a, "a2", withHistory),
		item(n, "n1", none),
		item(a, "a3", keyed(withHistory, "ka")), // a1's key
		item(b, "b2", keyed(withHistory, "kb")),
		item(n, "n2", keyed(none, "kn")),
		item(n, "n3", keyed(none, "kn")), // n2's key
	}
	second := []broker.PublishItem{
		item(a, "a4", keyed(withHistory, "ka")), // a1's key
		item(b, "b3", keyed(withHistory, "kb")), // b2's key
		item(a, "a5", withHistory),
		item(n, "n4", keyed(none, "kn")), // n2's key
	}
	// Leftovers of an earlier call, each the opposite of the result due.
	for i := range second {
		second[i].Position = broker.StreamPosition{Offset: 99, Epoch: "stale"}
		second[i].Suppressed = i == 2
		second[i].Err = errors.New("stale")
	}
	for _, call := range []struct {
		name  string
		items []broker.PublishItem
		want  []result
	}{
		{"first call", first, []result{{1, false}, {1, false}, {2, false}, {0, false}, {1, true}, {2, false}, {0, false}, {0, true}}},
		{"second call", second, []result{{1, true}, {2, true}, {3, false}, {0, true}}},
	} {
		e.publishMany(call.items)
		checkItems(t, call.items)
		for i, it := range call.items {
			if it.Position.Offset != call.want[i].offset || it.Suppressed != call.want[i].suppressed {
				t.Errorf("%s, item %d (%q on %s): offset %d, suppressed %v; want %d, %v",
					call.name, i, it.Data, it.Channel, it.Position.Offset, it.Suppressed, call.want[i].offset, call.want[i].suppressed)
			}
		}
	}
	all := append(append([]broker.PublishItem(nil), first...), second...)
	for ch, wantTop := range map[string]uint64{a: 3, b: 2} {
		_, top := e.history(ch, broker.HistoryFilter{})
		if top.Offset != wantTop || top.Epoch == "" {
			t.Errorf("%s: stream top %+v, want offset %d and an epoch", ch, top, wantTop)
		}
		for _, it := range itemsOf(all, ch) {
			if it.Position.Epoch != top.Epoch {
				t.Errorf("%s: item %q has epoch %q, the stream %q", ch, it.Data, it.Position.Epoch, top.Epoch)
			}
		}
	}
	for _, it := range itemsOf(all, n) {
		if it.Position != (broker.StreamPosition{}) {
			t.Errorf("%s: item %q without history has position %+v, want zero", n, it.Data, it.Position)
		}
	}

	published := map[string][]broker.PublishItem{
		a: {first[0], first[2], second[2]},
		b: {first[1], first[5]},
		n: {first[3], first[6]},
	}
	for _, ch := range []string{a, b} {
		pubs, _ := e.history(ch, broker.HistoryFilter{Limit: -1})
		if got, want := pubData(pubs), itemData(published[ch]); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: history holds %q, want %q", ch, got, want)
		}
	}
	return published
}

// interleaved returns n items spread over chs in stretches of one to
// four items of one channel, in an order fixed by seed; item i carries
// data "i".
func interleaved(chs []string, n int, seed uint64, opts broker.PublishOptions) []broker.PublishItem {
	rng := rand.New(rand.NewPCG(seed, seed))
	items := make([]broker.PublishItem, 0, n)
	for len(items) < n {
		ch := chs[rng.IntN(len(chs))]
		for range min(1+rng.IntN(4), n-len(items)) {
			items = append(items, item(ch, strconv.Itoa(len(items)), opts))
		}
	}
	return items
}

// testPublishManyOrder: a PublishMany interleaving channels gives each
// channel's items consecutive offsets in item order, delivers them in
// that order, and history reads them back the same.
func testPublishManyOrder(t *testing.T, e *brokerEnv) {
	const n = 300
	for _, tt := range []struct {
		name string
		opts broker.PublishOptions
	}{
		{"WithHistory", broker.PublishOptions{HistorySize: n, HistoryTTL: time.Minute}},
		{"WithoutHistory", broker.PublishOptions{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e.skipUnlessStreams(t, tt.opts)
			chs := []string{e.channel(), e.channel(), e.channel()}
			items := interleaved(chs, n, 1, tt.opts)
			publishMany(t, e.b, items)
			history := tt.opts.HistorySize > 0
			for _, ch := range chs {
				mine := itemsOf(items, ch)
				for i, it := range mine {
					want := uint64(i + 1)
					if !history {
						want = 0
					}
					if it.Position.Offset != want || it.Suppressed || it.Position.Epoch != mine[0].Position.Epoch {
						t.Fatalf("%s: item %d (%q) has position %+v, suppressed %v; want offset %d in the epoch of the first",
							ch, i, it.Data, it.Position, it.Suppressed, want)
					}
				}
				checkDelivered(t, e.rec, ch, mine)
				if !history {
					continue
				}
				pubs, _, err := e.b.History(ch, broker.HistoryOptions{Filter: broker.HistoryFilter{Limit: -1}})
				if err != nil {
					t.Fatalf("History: %v", err)
				}
				checkOffsets(t, pubs, span(1, uint64(len(mine)))...)
				for i, p := range pubs {
					if i < len(mine) && string(p.Data) != string(mine[i].Data) {
						t.Errorf("%s: history has %q at offset %d, want %q", ch, p.Data, p.Offset, mine[i].Data)
					}
				}
			}
		})
	}
}

// testPublishManyConcurrent: callers of PublishMany on the same channels
// at once each keep their order per channel, in the offsets they get
// and in delivery, and one channel is never handled concurrently.
func testPublishManyConcurrent(t *testing.T, e *brokerEnv) {
	const publishers, batches = 4, 25
	chs := []string{e.channel(), e.channel(), e.channel()}
	results := publishManyConcurrently(t, e.streamEnv, chs, publishers, batches, withHistory)
	checkPublisherOffsets(t, chs, results)
	checkMergedStreams(t, e, chs, publishers*len(itemsOf(results[0], chs[0])))
}

// checkPublisherOffsets fails the test unless each publisher's items
// (publishManyConcurrently's results) got increasing offsets per channel.
func checkPublisherOffsets(t *testing.T, chs []string, results [][]broker.PublishItem) {
	t.Helper()
	for p, items := range results {
		for _, ch := range chs {
			var last uint64
			for _, it := range itemsOf(items, ch) {
				if it.Position.Offset <= last {
					t.Fatalf("%s: publisher %d's item %q got offset %d after %d", ch, p, it.Data, it.Position.Offset, last)
				}
				last = it.Position.Offset
			}
		}
	}
}

// testPatternPublishMany: the items of a PublishMany that have a pattern
// scope reach the pattern path, in order, once, with their positions;
// those without a scope and suppressed ones do not.
func testPatternPublishMany(t *testing.T, e *brokerEnv) {
	e.patternBroker()
	scope := e.scope()
	c1, c2 := e.channel(), uniqueChannel(t) // c2 only through the scope
	sc := scoped(withHistory, scope)
	items := []broker.PublishItem{
		item(c1, "a", sc),
		item(c1, "b", withHistory),
		item(c2, "c", sc),
		item(c1, "d", keyed(sc, "k")),
		item(c2, "e", sc),
		item(c1, "f", keyed(sc, "k")), // suppressed
		item(c1, "g", sc),
		item(c2, "h", withHistory),
		item(c2, "i", sc),
	}
	publishMany(t, e.b, items)
	if !items[5].Suppressed {
		t.Fatalf("item with a repeated key not suppressed: %+v", items[5].Position)
	}
	for _, tt := range []struct {
		ch   string
		want []broker.PublishItem
	}{
		{c1, []broker.PublishItem{items[0], items[3], items[6]}},
		{c2, []broker.PublishItem{items[2], items[4], items[8]}},
	} {
		ps := e.rec.waitPatterns(t, tt.ch, len(tt.want))
		checkScopes(t, ps, scope)
		if got := patternData(ps); !reflect.DeepEqual(got, itemData(tt.want)) {
			t.Errorf("%s: pattern path delivered %q, want %q", tt.ch, got, itemData(tt.want))
		}
		for i, p := range ps {
			if p.sp != tt.want[i].Position || p.pub.Offset != tt.want[i].Position.Offset {
				t.Errorf("%s: pattern delivery %d (%q) has position %+v, offset %d; PublishMany set %+v",
					tt.ch, i, p.pub.Data, p.sp, p.pub.Offset, tt.want[i].Position)
			}
		}
		e.publish(tt.ch, "marker", sc)
		if got := patternData(e.rec.waitPatterns(t, tt.ch, len(tt.want)+1)); got[len(tt.want)] != "marker" {
			t.Errorf("%s: pattern path delivered %q, want the marker right after", tt.ch, got)
		}
	}
	checkDelivered(t, e.rec, c1, []broker.PublishItem{items[0], items[1], items[3], items[6]})
}

// testPublishManyAfterClose: once the broker is closed, PublishMany sets
// an error on every item and publishes nothing.
func testPublishManyAfterClose(t *testing.T, e *brokerEnv) {
	b := e.newBroker(t)
	rec := e.recorder()
	if err := b.Run(rec); err != nil {
		t.Fatalf("Run: %v", err)
	}
	ch := uniqueChannel(t)
	if err := b.Subscribe(ch); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	items := []broker.PublishItem{
		item(ch, "a", withHistory),
		item(ch, "b", keyed(withHistory, "k")),
		item(uniqueChannel(t), "c", broker.PublishOptions{}),
	}
	b.PublishMany(items)
	for i, it := range items {
		if it.Err == nil || it.Suppressed || it.Position != (broker.StreamPosition{}) {
			t.Errorf("item %d after Close: error %v, suppressed %v, position %+v; want an error only", i, it.Err, it.Suppressed, it.Position)
		}
	}
	if _, _, err := b.Publish(ch, []byte("d"), withHistory); err == nil {
		t.Error("Publish after Close succeeded")
	}
	if n := rec.callCount(); n != 0 {
		t.Errorf("%d HandleRuns calls after publishing to a closed broker", n)
	}
}

// testPublishManyLarge: a PublishMany of 2,000 items over 50 channels is
// published and delivered completely, each channel in order.
func testPublishManyLarge(t *testing.T, e *brokerEnv) {
	e.needStreams(withHistory)
	const n, channels = 2000, 50
	opts := broker.PublishOptions{HistorySize: n, HistoryTTL: time.Minute}
	chs := make([]string, channels)
	for i := range chs {
		chs[i] = e.channel()
	}
	items := make([]broker.PublishItem, n)
	for i := range items {
		// Stretches of three items of one channel, going round.
		items[i] = item(chs[i/3%channels], fmt.Sprint(i), opts)
	}
	publishMany(t, e.b, items)
	for _, ch := range chs {
		mine := itemsOf(items, ch)
		for i, it := range mine {
			if it.Position.Offset != uint64(i+1) {
				t.Fatalf("%s: item %d (%q) has offset %d, want %d", ch, i, it.Data, it.Position.Offset, i+1)
			}
		}
		checkDelivered(t, e.rec, ch, mine)
		if _, top := e.history(ch, broker.HistoryFilter{}); top != mine[len(mine)-1].Position {
			t.Errorf("%s: stream top %+v, want the last item's %+v", ch, top, mine[len(mine)-1].Position)
		}
	}
}

// testPublishManyLongRuns: long stretches of items into one channel with
// history (a batch from one publisher), which a broker may publish
// together, broken by items it may not join to them (an idempotency
// key, a repeated key, a version, delta, other history options, another
// channel), get the offsets they would get one by one, are delivered in
// order, and leave the history trimmed to its size exactly.
func testPublishManyLongRuns(t *testing.T, e *brokerEnv) {
	e.needStreams(withHistory)
	const size = 250
	hist := broker.PublishOptions{HistorySize: size, HistoryTTL: time.Minute}
	calm := noDelta(hist)
	a, b := e.channel(), e.channel()
	var items []broker.PublishItem
	stretch := func(ch string, n int, opts broker.PublishOptions) {
		for range n {
			items = append(items, item(ch, fmt.Sprintf("%s-%d", ch[len(ch)-3:], len(items)), opts))
		}
	}
	versioned := hist
	versioned.Version = 7
	delta := hist
	delta.UseDelta = true
	bigger := calm
	bigger.HistorySize = size + 1
	stretch(a, 300, calm)
	stretch(a, 1, keyed(calm, "k"))
	stretch(a, 1, keyed(calm, "k")) // suppressed: the same key
	stretch(a, 40, calm)
	stretch(a, 1, versioned)
	stretch(a, 30, hist) // a delta base to clear
	stretch(a, 1, delta)
	stretch(a, 20, hist)
	stretch(b, 5, calm)
	stretch(a, 20, bigger)
	stretch(a, 200, calm)
	publishMany(t, e.b, items)

	var published []broker.PublishItem
	for i, it := range items {
		if it.Channel != a {
			continue
		}
		if i > 0 && it.Opts.IdempotencyKey != "" && items[i-1].Opts.IdempotencyKey == it.Opts.IdempotencyKey {
			if !it.Suppressed || it.Position != items[i-1].Position {
				t.Errorf("item %d (repeated key): suppressed %v at %+v, want suppressed at %+v", i, it.Suppressed, it.Position, items[i-1].Position)
			}
			continue
		}
		published = append(published, it)
	}
	for k, it := range published {
		if it.Suppressed || it.Position.Offset != uint64(k+1) || it.Position.Epoch != published[0].Position.Epoch {
			t.Fatalf("%s: publication %d (%q): position %+v, suppressed %v; want offset %d in the first's epoch",
				a, k, it.Data, it.Position, it.Suppressed, k+1)
		}
	}
	checkDelivered(t, e.rec, a, published)
	checkDelivered(t, e.rec, b, itemsOf(items, b))
	pubs, top := e.history(a, broker.HistoryFilter{Limit: -1})
	last := published[len(published)-1]
	if top != last.Position {
		t.Errorf("%s: stream top %+v, want the last publication's %+v", a, top, last.Position)
	}
	checkOffsets(t, pubs, span(last.Position.Offset-size+1, last.Position.Offset)...)
	for i, p := range pubs {
		if want := published[len(published)-size+i]; string(p.Data) != string(want.Data) {
			t.Fatalf("%s: history has %q at offset %d, want %q", a, p.Data, p.Offset, want.Data)
		}
	}
}
