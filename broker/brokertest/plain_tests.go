package brokertest

import (
	"bytes"
	"fmt"
	"maps"
	"reflect"
	"testing"

	"github.com/gyrehq/gyre/broker"
)

// Tests of publications in channels that take no delta
// (PublishOptions.NoDelta), which a broker may publish more cheaply when
// they need nothing kept (no history, no idempotency key), mixed in one
// PublishMany with publications that do.

// noDelta returns opts with NoDelta set.
func noDelta(opts broker.PublishOptions) broker.PublishOptions {
	opts.NoDelta = true
	return opts
}

// testPublishManyMixed: a PublishMany mixing, in one channel and across
// channels, publications with and without history, with and without an
// idempotency key, and with a version (ignored without history), all in
// channels that take no delta, gives each item the result it would get
// alone and delivers each channel's publications in item order.
func testPublishManyMixed(t *testing.T, e *brokerEnv) {
	e.needStreams(withHistory)
	plain, hist := noDelta(broker.PublishOptions{}), noDelta(withHistory)
	versioned := plain
	versioned.Version = 1
	a, n := e.channel(), e.channel()
	items := []broker.PublishItem{
		item(a, "a1", plain),
		item(n, "n1", plain),
		item(a, "a2", hist),
		item(a, "a3", plain),
		item(n, "n2", keyed(plain, "k")),
		item(n, "n3", plain),
		item(a, "a4", keyed(hist, "ka")),
		item(n, "n4", keyed(plain, "k")), // n2's key
		item(a, "a5", plain),
		item(n, "n5", versioned),
		item(n, "n6", versioned), // the same version: not compared without history
		item(a, "a6", hist),
	}
	publishMany(t, e.b, items)
	type result struct {
		offset     uint64
		suppressed bool
	}
	want := []result{{0, false}, {0, false}, {1, false}, {0, false}, {0, false}, {0, false},
		{2, false}, {0, true}, {0, false}, {0, false}, {0, false}, {3, false}}
	for i, it := range items {
		if it.Position.Offset != want[i].offset || it.Suppressed != want[i].suppressed {
			t.Errorf("item %d (%q on %s): offset %d, suppressed %v; want %d, %v",
				i, it.Data, it.Channel, it.Position.Offset, it.Suppressed, want[i].offset, want[i].suppressed)
		}
		if want[i].offset == 0 && !it.Suppressed && it.Position.Epoch != "" {
			t.Errorf("item %d (%q on %s) without history has epoch %q", i, it.Data, it.Channel, it.Position.Epoch)
		}
	}
	published := map[string][]broker.PublishItem{
		a: {items[0], items[2], items[3], items[6], items[8], items[11]},
		n: {items[1], items[4], items[5], items[9], items[10]},
	}
	for _, ch := range []string{a, n} {
		checkDelivered(t, e.rec, ch, published[ch])
		e.checkNothingMore(ch, len(published[ch]), plain)
	}
	pubs, top := e.history(a, broker.HistoryFilter{Limit: -1})
	if got := pubData(pubs); !reflect.DeepEqual(got, []string{"a2", "a4", "a6"}) || top != items[11].Position {
		t.Errorf("%s: history %q, top %+v; want [a2 a4 a6] at %+v", a, got, top, items[11].Position)
	}
}

// testPublishManyBroadcast: the same data, tags, client info and trace
// published into many channels in one PublishMany (as a broadcast does,
// with one slice and one map for all) reach each channel intact, and so
// do items in between that share some of them but not all: other tags,
// no info, a shorter slice of the same array, an equal copy, another
// trace.
func testPublishManyBroadcast(t *testing.T, e *brokerEnv) {
	data := []byte("broadcast payload")
	tags := map[string]string{"kind": "notice"}
	info := &broker.ClientInfo{ClientID: "c1", UserID: "u1", ConnInfo: []byte(`{"a":1}`), ChanInfo: []byte(`{"b":2}`)}
	tc := testTrace(60)
	opts := noDelta(broker.PublishOptions{Tags: tags, ClientInfo: info, Trace: tc})
	variants := map[int]func(it *broker.PublishItem){
		3: func(it *broker.PublishItem) { it.Opts.Tags = map[string]string{"kind": "other"} },
		4: func(it *broker.PublishItem) { it.Opts.ClientInfo = nil },
		5: func(it *broker.PublishItem) { it.Data = data[:9] },
		6: func(it *broker.PublishItem) { it.Data = bytes.Clone(data) },
		7: func(it *broker.PublishItem) { it.Opts.Trace = testTrace(70) },
		8: func(it *broker.PublishItem) { it.Opts.Trace = nil },
		9: func(it *broker.PublishItem) { it.Opts.Tags = nil },
	}
	items := make([]broker.PublishItem, 40)
	for i := range items {
		items[i] = broker.PublishItem{Channel: e.channel(), Data: data, Opts: opts}
		if f := variants[i]; f != nil {
			f(&items[i])
		}
	}
	sent := make([]broker.PublishItem, len(items))
	for i, it := range items {
		sent[i] = it
		sent[i].Data = bytes.Clone(it.Data)
	}
	publishMany(t, e.b, items)
	for i, it := range items {
		if it.Position != (broker.StreamPosition{}) || it.Suppressed {
			t.Errorf("item %d: position %+v, suppressed %v; want zero", i, it.Position, it.Suppressed)
		}
		d := e.rec.waitPubs(t, it.Channel, 1)[0]
		p, want := d.pub, sent[i]
		if !bytes.Equal(p.Data, want.Data) || !maps.Equal(p.Tags, want.Opts.Tags) || p.Offset != 0 || d.delta || d.prev != nil {
			t.Errorf("item %d: delivered data %q tags %v offset %d delta %v; want %q, %v, 0, no delta",
				i, p.Data, p.Tags, p.Offset, d.delta, want.Data, want.Opts.Tags)
		}
		if wi := want.Opts.ClientInfo; (wi == nil) != (p.Info == nil) || wi != nil && (p.Info.ClientID != wi.ClientID ||
			p.Info.UserID != wi.UserID || !bytes.Equal(p.Info.ConnInfo, wi.ConnInfo) || !bytes.Equal(p.Info.ChanInfo, wi.ChanInfo)) {
			t.Errorf("item %d: delivered info %+v, want %+v", i, p.Info, wi)
		}
		if p.Time == 0 {
			t.Errorf("item %d: delivered without a time", i)
		}
		checkTrace(t, fmt.Sprint("item ", i), &p, want.Opts.Trace)
	}
}

// testDeltaAmongPlain: in a channel that takes delta, a publication
// without delta between delta ones still resets the delta base, when
// the items come in one PublishMany with items of channels that take no
// delta: subscribers got it in full, so the next delta must not be made
// against the one before it. A channel that took no delta so far and
// starts (a changed namespace) has no base for its first delta.
func testDeltaAmongPlain(t *testing.T, e *brokerEnv) {
	eachHistory(t, func(t *testing.T, opts broker.PublishOptions) {
		// The delta base is kept with the stream's meta, also for
		// channels without history.
		e.skipUnlessStreams(t, withHistory)
		d, x, y := e.channel(), e.channel(), e.channel()
		delta := opts
		delta.UseDelta = true
		other := noDelta(broker.PublishOptions{})
		items := []broker.PublishItem{
			item(x, "x1", other),
			item(d, "one", delta),
			item(x, "x2", other),
			item(d, "two", delta),
			item(y, "y1", noDelta(opts)),
			item(d, "three", opts),
			item(x, "x3", other),
			item(d, "four", delta),
			item(y, "y2", noDelta(opts)),
		}
		publishMany(t, e.b, items)
		ds := e.rec.waitPubs(t, d, 4)
		if got := deliveredData(ds); !reflect.DeepEqual(got, []string{"one", "two", "three", "four"}) {
			t.Fatalf("%s: delivered %q", d, got)
		}
		if !ds[0].delta || !ds[1].delta || ds[2].delta || !ds[3].delta {
			t.Errorf("delta flags = %v %v %v %v, want true true false true", ds[0].delta, ds[1].delta, ds[2].delta, ds[3].delta)
		}
		if p := ds[1].prev; p == nil || string(p.Data) != "one" || p.Offset != ds[0].pub.Offset {
			t.Errorf("second publication's prev = %+v, want the first", p)
		}
		if p := ds[3].prev; p != nil && string(p.Data) != "three" {
			t.Errorf("publication after one without delta has prev %q, want three or none", p.Data)
		}
		for ch, want := range map[string][]string{x: {"x1", "x2", "x3"}, y: {"y1", "y2"}} {
			if got := deliveredData(e.rec.waitPubs(t, ch, len(want))); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: delivered %q, want %q", ch, got, want)
			}
		}
		// y took no delta so far: its first delta has no base, or
		// the publication subscribers got last.
		e.publish(y, "y3", delta)
		e.publish(y, "y4", delta)
		ys := e.rec.waitPubs(t, y, 4)
		if p := ys[2].prev; p != nil && string(p.Data) != "y2" {
			t.Errorf("%s: first delta has prev %q, want y2 or none", y, p.Data)
		}
		if p := ys[3].prev; p == nil || string(p.Data) != "y3" {
			t.Errorf("%s: second delta has prev %+v, want y3", y, p)
		}
	})
}

// testPatternPublishManyPlain: items of channels that take no delta, with
// a pattern scope, mixed with items that keep history or have a key,
// reach the pattern path in order with their channel, once, and the
// exact path too.
func testPatternPublishManyPlain(t *testing.T, e *brokerEnv) {
	e.patternBroker()
	e.needStreams(withHistory)
	scope := e.scope()
	c1, c2 := e.channel(), uniqueChannel(t) // c2 only through the scope
	plain := noDelta(scoped(broker.PublishOptions{}, scope))
	tc := testTrace(80)
	items := []broker.PublishItem{
		item(c1, "a", plain),
		item(c2, "b", traced(plain, tc)),
		item(c1, "c", noDelta(scoped(withHistory, scope))),
		item(c1, "d", plain),
		item(c1, "e", noDelta(broker.PublishOptions{})), // no scope
		item(c2, "f", plain),
		item(c1, "g", keyed(plain, "k")),
		item(c1, "h", keyed(plain, "k")), // suppressed
		item(c2, "i", traced(plain, tc)),
	}
	publishMany(t, e.b, items)
	if !items[7].Suppressed {
		t.Fatalf("item with a repeated key not suppressed: %+v", items[7].Position)
	}
	for _, tt := range []struct {
		ch   string
		want []broker.PublishItem
	}{
		{c1, []broker.PublishItem{items[0], items[2], items[3], items[6]}},
		{c2, []broker.PublishItem{items[1], items[5], items[8]}},
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
			checkTrace(t, fmt.Sprintf("%s: pattern delivery %d", tt.ch, i), &p.pub, tt.want[i].Opts.Trace)
		}
		e.publish(tt.ch, "marker", plain)
		if got := patternData(e.rec.waitPatterns(t, tt.ch, len(tt.want)+1)); got[len(tt.want)] != "marker" {
			t.Errorf("%s: pattern path delivered %q, want the marker right after", tt.ch, got)
		}
	}
	checkDelivered(t, e.rec, c1, []broker.PublishItem{items[0], items[2], items[3], items[4], items[6]})
}
