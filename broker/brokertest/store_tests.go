package brokertest

import (
	"cmp"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
)

// Tests of broker.Store.Append.

// testAppendOffsets: items of one channel get offsets 1, 2, 3... in one
// epoch, whether appended one per call or several in one, and the stream
// top is the last item's position.
func testAppendOffsets(t *testing.T, e *storeEnv) {
	ch := e.channel()
	var items []broker.StoreItem
	for range 4 {
		one := []broker.StoreItem{storeItem(item(ch, "m", withHistory))}
		e.append(one)
		items = append(items, one...)
	}
	three := []broker.StoreItem{
		storeItem(item(ch, "m", withHistory)), storeItem(item(ch, "m", withHistory)), storeItem(item(ch, "m", withHistory)),
	}
	e.append(three)
	items = append(items, three...)
	for i, it := range items {
		if it.Position.Offset != uint64(i+1) || it.Position.Epoch == "" || it.Position.Epoch != items[0].Position.Epoch || it.Suppressed {
			t.Fatalf("item %d: position %+v, suppressed %v; want offset %d in the epoch of the first", i, it.Position, it.Suppressed, i+1)
		}
	}
	if _, top := e.history(ch, broker.HistoryFilter{}); top != items[len(items)-1].Position {
		t.Errorf("stream top %+v, want the last item's %+v", top, items[len(items)-1].Position)
	}
}

// testAppendResults: Append sets each item's result as PublishMany does
// (see publishManyResults).
func testAppendResults(t *testing.T, e *storeEnv) {
	publishManyResults(t, e.streamEnv)
}

// testAppendOrder: an Append interleaving channels gives each channel's
// items consecutive offsets from 1 in item order, and history reads them
// back in that order.
func testAppendOrder(t *testing.T, e *storeEnv) {
	const n = 300
	chs := []string{e.channel(), e.channel(), e.channel()}
	items := interleaved(chs, n, 1, broker.PublishOptions{HistorySize: n, HistoryTTL: time.Minute})
	appendItems(e.s, items)
	checkItems(t, items)
	for _, ch := range chs {
		mine := itemsOf(items, ch)
		for i, it := range mine {
			if it.Position.Offset != uint64(i+1) || it.Suppressed || it.Position.Epoch != mine[0].Position.Epoch {
				t.Fatalf("%s: item %d (%q) has position %+v, suppressed %v; want offset %d in the epoch of the first",
					ch, i, it.Data, it.Position, it.Suppressed, i+1)
			}
		}
		checkStoredItems(t, e.streamEnv, ch, mine)
	}
}

// checkStoredItems fails the test unless ch's history holds exactly the
// publications of items, each at the offset its item got.
func checkStoredItems(t *testing.T, e *streamEnv, ch string, items []broker.PublishItem) {
	t.Helper()
	pubs, top := e.history(ch, broker.HistoryFilter{Limit: -1})
	if len(pubs) != len(items) {
		t.Fatalf("%s: history holds %d publications, want %d", ch, len(pubs), len(items))
	}
	for i, p := range pubs {
		if it := items[i]; p.Offset != it.Position.Offset || string(p.Data) != string(it.Data) {
			t.Fatalf("%s: history entry %d is %q at offset %d; item %q got %+v", ch, i, p.Data, p.Offset, it.Data, it.Position)
		}
	}
	if last := items[len(items)-1].Position; top != last {
		t.Errorf("%s: stream top %+v, want the last item's %+v", ch, top, last)
	}
}

// testAppendConcurrent: Append calls at once on the same channels, of
// many items or of one, hand out distinct offsets with no gap, keep each
// caller's items in order, and store each publication at its offset.
func testAppendConcurrent(t *testing.T, e *storeEnv) {
	const publishers = 4
	opts := broker.PublishOptions{HistorySize: 1000, HistoryTTL: time.Minute}
	t.Run("Batches", func(t *testing.T) {
		chs := []string{e.channel(), e.channel(), e.channel()}
		results := publishManyConcurrently(t, e.streamEnv, chs, publishers, 20, opts)
		checkPublisherOffsets(t, chs, results)
		all := slices.Concat(results...)
		for _, ch := range chs {
			mine := itemsOf(all, ch)
			slices.SortFunc(mine, func(a, b broker.PublishItem) int { return cmp.Compare(a.Position.Offset, b.Position.Offset) })
			for i, it := range mine {
				if it.Position.Offset != uint64(i+1) {
					t.Fatalf("%s: offsets handed out %v, want 1 to %d", ch, itemOffsets(mine), len(mine))
				}
			}
			checkStoredItems(t, e.streamEnv, ch, mine)
			checkHistoryOrder(t, e.streamEnv, ch)
		}
	})
	t.Run("Single", func(t *testing.T) {
		chs := []string{e.channel(), e.channel()}
		const each = 50
		publishConcurrently(t, e.streamEnv, chs, publishers, each, opts)
		for _, ch := range chs {
			pubs := checkHistoryOrder(t, e.streamEnv, ch)
			checkOffsets(t, pubs, span(1, publishers*each)...)
		}
	})
}

// checkHistoryOrder reads ch's whole history, fails the test unless each
// publisher's publications ("<publisher>-<i>") are in their order, and
// returns it.
func checkHistoryOrder(t *testing.T, e *streamEnv, ch string) []*broker.Publication {
	t.Helper()
	pubs, _ := e.history(ch, broker.HistoryFilter{Limit: -1})
	order := publisherOrder{}
	for _, p := range pubs {
		order.Check(t, ch, p.Data)
	}
	return pubs
}

func itemOffsets(items []broker.PublishItem) []uint64 {
	out := make([]uint64, 0, len(items))
	for _, it := range items {
		out = append(out, it.Position.Offset)
	}
	return out
}

// testAppendWithoutHistory: with size or TTL zero, and no idempotency key
// or version, an item gets the zero position and no error, is not stored
// and leaves the stream's offset alone.
func testAppendWithoutHistory(t *testing.T, e *storeEnv) {
	for _, tt := range withoutHistory {
		t.Run(tt.name, func(t *testing.T) {
			ch := e.channel()
			items := []broker.StoreItem{
				storeItem(item(ch, "stored", withHistory)),
				storeItem(item(ch, "transient", tt.opts)),
				storeItem(item(ch, "stored again", withHistory)),
			}
			e.append(items)
			if it := items[1]; it.Position != (broker.StreamPosition{}) || it.Suppressed {
				t.Errorf("item without history: position %+v, suppressed %v; want zero, false", it.Position, it.Suppressed)
			}
			before, after := items[0].Position, items[2].Position
			if after.Offset != before.Offset+1 || after.Epoch != before.Epoch {
				t.Errorf("item with history after one without: %+v, want offset %d epoch %q", after, before.Offset+1, before.Epoch)
			}
			pubs, _ := e.history(ch, broker.HistoryFilter{Limit: -1})
			if got := pubData(pubs); !reflect.DeepEqual(got, []string{"stored", "stored again"}) {
				t.Errorf("history holds %q", got)
			}
		})
	}
}

// testAppendFields: data, tags, client info and the item's time are
// stored as given, and come back in history and as the next delta item's
// Prev.
func testAppendFields(t *testing.T, e *storeEnv) {
	ch := e.channel()
	opts := withHistory
	opts.UseDelta = true // so that the store keeps it as the next one's Prev
	opts.ClientInfo = &broker.ClientInfo{ClientID: "c1", UserID: "u1", ConnInfo: []byte(`{"a":1}`), ChanInfo: []byte(`{"b":2}`)}
	opts.Tags = map[string]string{"k": "v", "n": "1"}
	const at = 1_700_000_000_123 // a time unlike now: the store keeps the item's
	first := []broker.StoreItem{{PublishItem: item(ch, `{"text":"hi"}`, opts), Time: at}}
	e.append(first)
	second := []broker.StoreItem{{PublishItem: item(ch, "next", broker.PublishOptions{HistorySize: 10, HistoryTTL: time.Minute, UseDelta: true}), Time: at + 5}}
	e.append(second)

	want := broker.Publication{Offset: 1, Data: []byte(`{"text":"hi"}`), Info: opts.ClientInfo, Tags: opts.Tags, Time: at}
	pubs, _ := e.history(ch, broker.HistoryFilter{Limit: -1})
	if len(pubs) != 2 {
		t.Fatalf("history has %d publications, want 2", len(pubs))
	}
	for _, got := range []struct {
		where string
		pub   *broker.Publication
	}{{"history", pubs[0]}, {"Prev", second[0].Prev}} {
		if got.pub == nil || !reflect.DeepEqual(*got.pub, want) {
			t.Errorf("%s: %+v, want %+v", got.where, got.pub, want)
		}
	}
	if p := pubs[1]; p.Time != at+5 || p.Info != nil || len(p.Tags) != 0 {
		t.Errorf("second publication: time %d info %+v tags %v; want %d, none, none", p.Time, p.Info, p.Tags, at+5)
	}
}

// testAppendIdempotency: a repeated key returns the first position,
// suppressed, and stores nothing; other keys store.
func testAppendIdempotency(t *testing.T, e *storeEnv) {
	eachHistory(t, func(t *testing.T, opts broker.PublishOptions) {
		ch := e.channel()
		publishIdempotent(t, e.streamEnv, ch, opts)
		if opts.HistorySize == 0 {
			return
		}
		pubs, _ := e.history(ch, broker.HistoryFilter{Limit: -1})
		if got := pubData(pubs); !reflect.DeepEqual(got, []string{"a", "c", "d"}) {
			t.Errorf("history holds %q, want [a c d]", got)
		}
	})
}

// testAppendVersion: stale versions are suppressed at the stream's top
// and not stored (see publishVersions).
func testAppendVersion(t *testing.T, e *storeEnv) {
	publishVersions(t, e.streamEnv)
}

// testAppendDelta: an item asking for delta gets the channel's previous
// publication as Prev, nil for the first; an item not asking gets none,
// and the item after it gets it or none (subscribers got it in full).
// Prev left by an earlier call is replaced. Items of one Append see the
// ones before them.
func testAppendDelta(t *testing.T, e *storeEnv) {
	eachHistory(t, func(t *testing.T, opts broker.PublishOptions) {
		delta := opts
		delta.UseDelta = true
		for _, oneCall := range []bool{false, true} {
			ch := e.channel()
			items := []broker.StoreItem{
				storeItem(item(ch, "one", delta)),
				storeItem(item(ch, "two", delta)),
				storeItem(item(ch, "three", opts)),
				storeItem(item(ch, "four", delta)),
			}
			for i := range items {
				items[i].Prev = &broker.Publication{Data: []byte("stale")}
			}
			if oneCall {
				e.append(items)
			} else {
				for i := range items {
					e.append(items[i : i+1])
				}
			}
			if p := items[0].Prev; p != nil {
				t.Errorf("one call %v: first publication of the channel has prev %q", oneCall, p.Data)
			}
			if p := items[1].Prev; p == nil || string(p.Data) != "one" || p.Offset != items[0].Position.Offset {
				t.Errorf("one call %v: second item's prev = %+v, want the first (offset %d)", oneCall, p, items[0].Position.Offset)
			}
			if p := items[2].Prev; p != nil {
				t.Errorf("one call %v: item without UseDelta has prev %q", oneCall, p.Data)
			}
			if p := items[3].Prev; p != nil && (string(p.Data) != "three" || p.Offset != items[2].Position.Offset) {
				t.Errorf("one call %v: item after one without delta has prev %q at %d, want three or none", oneCall, p.Data, p.Offset)
			}
		}
	})
}

// testAppendAfterClose: once the store is closed, Append sets an error on
// every item and nothing else.
func testAppendAfterClose(t *testing.T, e *storeEnv) {
	s := e.newStore(t)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ch := uniqueChannel(t)
	delta := withHistory
	delta.UseDelta = true
	items := []broker.StoreItem{
		storeItem(item(ch, "a", withHistory)),
		storeItem(item(ch, "b", keyed(withHistory, "k"))),
		storeItem(item(ch, "c", delta)),
		storeItem(item(uniqueChannel(t), "d", broker.PublishOptions{})),
	}
	s.Append(items)
	for i, it := range items {
		if it.Err == nil || it.Suppressed || it.Position != (broker.StreamPosition{}) || it.Prev != nil {
			t.Errorf("item %d after Close: error %v, suppressed %v, position %+v, prev %v; want an error only",
				i, it.Err, it.Suppressed, it.Position, it.Prev)
		}
	}
}

// testPeek: a peek at a channel without a stream is the zero position and
// creates nothing (the epoch History then hands out is the one the first
// publication gets); a peek at a stream is its top.
func testPeek(t *testing.T, e *storeEnv) {
	ch := e.channel()
	peek := func() broker.StreamPosition {
		t.Helper()
		pubs, top, err := e.s.History(ch, broker.HistoryOptions{Peek: true})
		if err != nil || len(pubs) != 0 {
			t.Fatalf("History with Peek: %d publications, %v", len(pubs), err)
		}
		return top
	}
	if top := peek(); top != (broker.StreamPosition{}) {
		t.Fatalf("peek at a channel without a stream: %+v, want the zero position", top)
	}
	if top := peek(); top != (broker.StreamPosition{}) {
		t.Fatalf("second peek: %+v: the first created a stream", top)
	}
	_, created := e.history(ch, broker.HistoryFilter{})
	if top := peek(); top != created {
		t.Fatalf("peek after History created the stream: %+v, want %+v", top, created)
	}
	one := []broker.StoreItem{storeItem(item(ch, "m", withHistory))}
	e.append(one)
	if top := peek(); top != one[0].Position || top.Epoch != created.Epoch {
		t.Fatalf("peek after a publication: %+v, want %+v in epoch %q", top, one[0].Position, created.Epoch)
	}
}
