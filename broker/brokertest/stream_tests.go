package brokertest

import (
	"bytes"
	"maps"
	"reflect"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
)

// testOffsets: every publish with history gets the next offset in one
// epoch, and the handler sees the position Publish returned.
func testOffsets(t *testing.T, e *brokerEnv) {
	ch := e.channel()
	var sps []broker.StreamPosition
	for i := range 5 {
		sp := e.publish(ch, "m", withHistory)
		if sp.Offset != uint64(i+1) {
			t.Fatalf("publish %d: offset %d, want %d", i+1, sp.Offset, i+1)
		}
		if sp.Epoch == "" {
			t.Fatalf("publish %d: empty epoch", i+1)
		}
		if i > 0 && sp.Epoch != sps[0].Epoch {
			t.Fatalf("publish %d: epoch %q changed from %q", i+1, sp.Epoch, sps[0].Epoch)
		}
		sps = append(sps, sp)
	}
	for i, d := range e.rec.waitPubs(t, ch, 5) {
		if d.sp != sps[i] || d.pub.Offset != sps[i].Offset {
			t.Errorf("delivery %d: position %+v, publication offset %d; Publish returned %+v", i, d.sp, d.pub.Offset, sps[i])
		}
	}
	_, top := e.history(ch, broker.HistoryFilter{})
	if top != sps[4] {
		t.Errorf("History top = %+v, want %+v", top, sps[4])
	}
}

// testHistoryCreatesStream: a subscriber can learn the epoch before the
// first publish, and the first publish continues that stream.
func testHistoryCreatesStream(t *testing.T, e *streamEnv) {
	ch := e.channel()
	pubs, top := e.history(ch, broker.HistoryFilter{Limit: -1})
	if len(pubs) != 0 || top.Offset != 0 || top.Epoch == "" {
		t.Fatalf("History of a new channel = %d publications, top %+v; want none, offset 0, an epoch", len(pubs), top)
	}
	sp := e.publish(ch, "m", withHistory)
	if want := (broker.StreamPosition{Offset: 1, Epoch: top.Epoch}); sp != want {
		t.Errorf("first publish = %+v, want %+v", sp, want)
	}
}

// withoutHistory are options that keep no history: size or TTL zero.
var withoutHistory = []struct {
	name string
	opts broker.PublishOptions
}{
	{"NoOptions", broker.PublishOptions{}},
	{"SizeZero", broker.PublishOptions{HistoryTTL: time.Minute}},
	{"TTLZero", broker.PublishOptions{HistorySize: 10}},
}

// testPublishWithoutHistory: with size or TTL zero a publication is
// delivered with offset 0, not stored, and leaves the stream's offset
// alone.
func testPublishWithoutHistory(t *testing.T, e *brokerEnv) {
	for _, tt := range withoutHistory {
		t.Run(tt.name, func(t *testing.T) {
			e.skipUnlessStreams(t, withHistory)
			ch := e.channel()
			before := e.publish(ch, "stored", withHistory)
			if sp := e.publish(ch, "transient", tt.opts); sp != (broker.StreamPosition{}) {
				t.Errorf("publish without history returned %+v, want zero", sp)
			}
			after := e.publish(ch, "stored again", withHistory)
			if after.Offset != before.Offset+1 || after.Epoch != before.Epoch {
				t.Errorf("publish with history after one without = %+v, want offset %d epoch %q", after, before.Offset+1, before.Epoch)
			}
			ds := e.rec.waitPubs(t, ch, 3)
			if got := deliveredData(ds); !reflect.DeepEqual(got, []string{"stored", "transient", "stored again"}) {
				t.Fatalf("delivered %q", got)
			}
			if ds[1].pub.Offset != 0 || ds[1].sp != (broker.StreamPosition{}) {
				t.Errorf("publication without history delivered with offset %d, position %+v", ds[1].pub.Offset, ds[1].sp)
			}
			pubs, _ := e.history(ch, broker.HistoryFilter{Limit: -1})
			checkOffsets(t, pubs, before.Offset, after.Offset)
		})
	}
}

// testPublicationFields: data, tags, client info and time reach both the
// handler and history.
func testPublicationFields(t *testing.T, e *brokerEnv) {
	ch := e.channel()
	info := &broker.ClientInfo{ClientID: "c1", UserID: "u1", ConnInfo: []byte(`{"a":1}`), ChanInfo: []byte(`{"b":2}`)}
	opts := withHistory
	opts.ClientInfo = info
	opts.Tags = map[string]string{"k": "v", "n": "1"}
	before := time.Now().UnixMilli()
	e.publish(ch, `{"text":"hi"}`, opts)
	after := time.Now().UnixMilli()
	pubs, _ := e.history(ch, broker.HistoryFilter{Limit: -1})
	if len(pubs) != 1 {
		t.Fatalf("history has %d publications, want 1", len(pubs))
	}
	d := e.rec.waitPubs(t, ch, 1)[0]
	for _, got := range []struct {
		where string
		pub   *broker.Publication
	}{{"delivered", &d.pub}, {"history", pubs[0]}} {
		p := got.pub
		if string(p.Data) != `{"text":"hi"}` || !maps.Equal(p.Tags, opts.Tags) || p.Offset != 1 {
			t.Errorf("%s: data %q tags %v offset %d", got.where, p.Data, p.Tags, p.Offset)
		}
		if p.Info == nil || p.Info.ClientID != "c1" || p.Info.UserID != "u1" ||
			!bytes.Equal(p.Info.ConnInfo, info.ConnInfo) || !bytes.Equal(p.Info.ChanInfo, info.ChanInfo) {
			t.Errorf("%s: info %+v, want %+v", got.where, p.Info, info)
		}
		if p.Time < before || p.Time > after {
			t.Errorf("%s: time %d outside the publish call [%d, %d]", got.where, p.Time, before, after)
		}
	}
}

// testChannelsIsolated: streams of different channels do not share
// offsets or publications.
func testChannelsIsolated(t *testing.T, e *streamEnv) {
	a, b := e.channel(), e.channel()
	e.publish(a, "a1", withHistory)
	e.publish(a, "a2", withHistory)
	if sp := e.publish(b, "b1", withHistory); sp.Offset != 1 {
		t.Errorf("first publish to a second channel got offset %d, want 1", sp.Offset)
	}
	pubs, top := e.history(b, broker.HistoryFilter{Limit: -1})
	if len(pubs) != 1 || string(pubs[0].Data) != "b1" || top.Offset != 1 {
		t.Errorf("history of the second channel: %d publications, top %+v", len(pubs), top)
	}
}

// testRemoveHistory: publications go, the stream position stays, and the
// next publish continues it.
func testRemoveHistory(t *testing.T, e *streamEnv) {
	ch := e.channel()
	var last broker.StreamPosition
	for range 3 {
		last = e.publish(ch, "m", withHistory)
	}
	if err := e.streams.RemoveHistory(ch); err != nil {
		t.Fatalf("RemoveHistory: %v", err)
	}
	pubs, top := e.history(ch, broker.HistoryFilter{Limit: -1})
	if len(pubs) != 0 || top != last {
		t.Errorf("after RemoveHistory: %d publications, top %+v; want none, %+v", len(pubs), top, last)
	}
	if sp := e.publish(ch, "m", withHistory); sp.Offset != last.Offset+1 || sp.Epoch != last.Epoch {
		t.Errorf("publish after RemoveHistory = %+v, want offset %d epoch %q", sp, last.Offset+1, last.Epoch)
	}
	if err := e.streams.RemoveHistory(uniqueChannel(t)); err != nil {
		t.Errorf("RemoveHistory of an unknown channel: %v", err)
	}
}

// testHistoryReturnsCopies: changing what History returned does not change
// what it returns next time.
func testHistoryReturnsCopies(t *testing.T, e *streamEnv) {
	ch := e.channel()
	opts := withHistory
	opts.ClientInfo = &broker.ClientInfo{ClientID: "c", UserID: "u", ConnInfo: []byte("conn"), ChanInfo: []byte("chan")}
	opts.Tags = map[string]string{"k": "v"}
	e.publish(ch, "first", opts)
	e.publish(ch, "second", opts)
	pubs, _ := e.history(ch, broker.HistoryFilter{Limit: -1})
	want := []broker.Publication{copyPub(*pubs[0]), copyPub(*pubs[1])}
	for _, p := range pubs {
		p.Data[0] = 'X'
		_ = append(p.Data[:1], "YYYYYYYYYYYY"...)
		p.Tags["k"] = "changed"
		p.Tags["new"] = "x"
		p.Info.ConnInfo[0] = 'X'
		p.Info.UserID = "other"
		p.Offset = 99
	}
	again, _ := e.history(ch, broker.HistoryFilter{Limit: -1})
	for i, p := range again {
		if !reflect.DeepEqual(*p, want[i]) {
			t.Errorf("publication %d changed through a returned copy: %+v, want %+v", i, *p, want[i])
		}
	}
}

// testPublishCopiesInput: a caller may reuse its buffers once Publish
// returns.
func testPublishCopiesInput(t *testing.T, e *streamEnv) {
	e.needStreams(withHistory)
	ch := e.channel()
	data := []byte("payload")
	opts := withHistory
	opts.Tags = map[string]string{"k": "v"}
	opts.ClientInfo = &broker.ClientInfo{ClientID: "c", UserID: "u", ConnInfo: []byte("conn")}
	if _, _, err := e.publishOne(ch, data, opts); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	copy(data, "XXXXXXX")
	opts.Tags["k"] = "changed"
	opts.ClientInfo.ConnInfo[0] = 'X'
	opts.ClientInfo.UserID = "other"
	pubs, _ := e.history(ch, broker.HistoryFilter{Limit: -1})
	if len(pubs) != 1 {
		t.Fatalf("history has %d publications, want 1", len(pubs))
	}
	p := pubs[0]
	if string(p.Data) != "payload" || p.Tags["k"] != "v" || string(p.Info.ConnInfo) != "conn" || p.Info.UserID != "u" {
		t.Errorf("stored publication follows the caller's buffers: data %q tags %v info %+v", p.Data, p.Tags, p.Info)
	}
}
