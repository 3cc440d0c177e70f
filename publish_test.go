package gyre_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/internal/enginetest"
	"github.com/gyrehq/gyre/protocol"
)

// TestPublishManySubscriberKinds publishes one run to subscribers that
// take it whole and to those that go publication by publication: a tag
// filter and delta compression. Each gets what single publishes would
// have given it, in order.
func TestPublishManySubscriberKinds(t *testing.T) {
	protocols(t, func(t *testing.T, proto protocol.Type) {
		n, url := newTestNode(t, filterConfig())
		const channel = "scores:run"
		plain := dial(t, url, proto)
		plain.connect(connToken(t, "1", 0, nil))
		goals := dial(t, url, proto)
		goals.connect(connToken(t, "2", 0, nil))
		delta := dial(t, url, proto)
		delta.connect(connToken(t, "3", 0, nil))
		for _, r := range []*protocol.Reply{
			plain.Subscribe(&protocol.SubscribeRequest{Channel: channel}),
			goals.Subscribe(&protocol.SubscribeRequest{Channel: channel, Tf: mustParse(t, `event == "goal"`)}),
			delta.Subscribe(&protocol.SubscribeRequest{Channel: channel, Delta: "fossil"}),
		} {
			if r.Error != nil {
				t.Fatalf("subscribe: %+v", r.Error)
			}
		}

		const count = 6
		items := make([]gyre.PublishItem, count)
		for i := range items {
			event := "shot"
			if i%3 == 1 {
				event = "goal"
			}
			items[i] = gyre.PublishItem{Data: bigDoc(i), Options: gyre.PublishOptions{Tags: map[string]string{"event": event}, UseDelta: true}}
		}
		publishMany(n, channel, items)
		for i, it := range items {
			if it.Err != nil || it.Result.Offset != uint64(i+1) {
				t.Fatalf("item %d: result %+v, error %v, want offset %d", i, it.Result, it.Err, i+1)
			}
		}

		for i, p := range plain.WaitPubs(channel, count) {
			if p.Offset != uint64(i+1) || p.Delta || !bytes.Equal(p.Data, bigDoc(i)) {
				t.Fatalf("plain subscriber: publication %d has offset %d, delta %v, data %.30q", i, p.Offset, p.Delta, p.Data)
			}
		}
		payloads, deltas := decodeDeltaStream(t, proto, delta.WaitPubs(channel, count))
		for i, p := range payloads {
			if !bytes.Equal(p, bigDoc(i)) {
				t.Fatalf("delta subscriber: publication %d decodes to %.30q", i, p)
			}
		}
		if deltas != count-1 {
			t.Fatalf("delta subscriber got %d deltas of %d publications, want %d", deltas, count, count-1)
		}
		got := goals.WaitPubs(channel, 2)
		time.Sleep(50 * time.Millisecond) // let anything unexpected arrive too
		if got = goals.Pubs(channel); len(got) != 2 || got[0].Offset != 2 || got[1].Offset != 5 {
			t.Fatalf("filtered subscriber got %s, want offsets 2 and 5", offsetsOf(got))
		}
	})
}

func offsetsOf(pubs []*protocol.Publication) string {
	var offsets []uint64
	for _, p := range pubs {
		offsets = append(offsets, p.Offset)
	}
	return fmt.Sprint(offsets)
}

// TestPublishManyBinaryToJSON: a run whose second publication cannot go to
// a JSON client (not JSON) gives the JSON subscriber the first and then
// closes it with 3506, never handing it the third over the gap; the
// protobuf subscriber gets all three.
func TestPublishManyBinaryToJSON(t *testing.T) {
	n, url := newTestNode(t, chatConfig())
	const channel = "chat:run"
	jsonSub := dial(t, url, protocol.TypeJSON)
	jsonSub.connect(connToken(t, "reader", 0, nil))
	protoSub := dial(t, url, protocol.TypeProtobuf)
	protoSub.connect(connToken(t, "other", 0, nil))
	for _, c := range []*testClient{jsonSub, protoSub} {
		if r := c.Subscribe(&protocol.SubscribeRequest{Channel: channel}); r.Error != nil {
			t.Fatal(r.Error)
		}
	}
	items := []gyre.PublishItem{{Data: []byte(`{"a":1}`)}, {Data: []byte{0xff, 0x00}}, {Data: []byte(`{"a":3}`)}}
	publishMany(n, channel, items)
	if err := errors.Join(items[0].Err, items[1].Err, items[2].Err); err != nil {
		t.Fatal(err)
	}
	for i, p := range protoSub.WaitPubs(channel, 3) {
		if !bytes.Equal(p.Data, items[i].Data) {
			t.Fatalf("protobuf subscriber: publication %d is %q, want %q", i, p.Data, items[i].Data)
		}
	}
	if ce := jsonSub.WaitClose(); ce.Code != 3506 {
		t.Fatalf("JSON subscriber closed with %d (%s), want 3506", ce.Code, ce.Reason)
	}
	if got := jsonSub.Pubs(channel); len(got) != 1 || got[0].Offset != 1 {
		t.Fatalf("JSON subscriber got %s before it was closed, want offset 1 alone", offsetsOf(got))
	}
}

// TestPublishManyErrors: a channel in no namespace fails every item, and a
// repeated idempotency key inside a run is suppressed with the first
// one's position.
func TestPublishManyErrors(t *testing.T) {
	n, _ := newTestNode(t, chatConfig())
	items := []gyre.PublishItem{{Data: []byte(`1`)}, {Data: []byte(`2`)}}
	publishMany(n, "nowhere:x", items)
	for i, it := range items {
		if !errors.Is(it.Err, gyre.ErrorUnknownChannel) {
			t.Fatalf("item %d: error %v, want ErrorUnknownChannel", i, it.Err)
		}
	}
	key := gyre.PublishOptions{IdempotencyKey: "k"}
	items = []gyre.PublishItem{{Data: []byte(`1`), Options: key}, {Data: []byte(`2`)}, {Data: []byte(`3`), Options: key}}
	publishMany(n, "chat:idem", items)
	want := []struct {
		offset     uint64
		suppressed bool
	}{{1, false}, {2, false}, {1, true}}
	for i, it := range items {
		if it.Err != nil || it.Result.Offset != want[i].offset || it.Result.Suppressed != want[i].suppressed {
			t.Fatalf("item %d: %+v, error %v, want offset %d, suppressed %v", i, it.Result, it.Err, want[i].offset, want[i].suppressed)
		}
	}
}

// TestBroadcastEncodesEachPublication: a PublishMany into many channels
// (a broadcast) encodes a publication once for all channels it goes to,
// and anew whenever the next differs: in its payload (also the same bytes
// in another slice), its tags, or with a history offset. Every
// subscriber gets its own channel's publication exactly, on every engine
// (through a broker's pub/sub each publication arrives as its own copy).
func TestBroadcastEncodesEachPublication(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, eng enginetest.Engine) {
		protocols(t, func(t *testing.T, proto protocol.Type) {
			testBroadcastEncodesEachPublication(t, eng, proto)
		})
	})
}

func testBroadcastEncodesEachPublication(t *testing.T, eng enginetest.Engine, proto protocol.Type) {
	n, url := newTestNode(t, eng.Config(t, chatConfig()))
	shared := []byte(`{"text":"same"}`)
	items := []gyre.PublishItem{
		{Channel: "personal-0", Data: shared},
		{Channel: "personal-1", Data: shared},
		{Channel: "personal-2", Data: []byte(`{"text":"same"}`)},
		{Channel: "personal-3", Data: []byte(`{"text":"other"}`)},
		{Channel: "personal-4", Data: shared, Options: gyre.PublishOptions{Tags: map[string]string{"k": "v"}}},
		{Channel: "personal-5", Data: shared, Options: gyre.PublishOptions{Tags: map[string]string{"k": "w"}}},
		{Channel: "chat:personal-6", Data: shared},
		{Channel: "chat:personal-7", Data: shared},
		{Channel: "personal-8", Data: shared},
	}
	subs := make([]*testClient, len(items))
	for i, it := range items {
		subs[i] = dial(t, url, proto)
		subs[i].connect(connToken(t, fmt.Sprint("user-", i), 0, nil))
		if r := subs[i].Subscribe(&protocol.SubscribeRequest{Channel: it.Channel}); r.Error != nil {
			t.Fatalf("subscribe to %s: %+v", it.Channel, r.Error)
		}
	}
	n.PublishMany(items)
	for i, it := range items {
		if it.Err != nil {
			t.Fatalf("%s: %v", it.Channel, it.Err)
		}
		got := subs[i].WaitPubs(it.Channel, 1)[0]
		if !bytes.Equal(got.Data, it.Data) || got.Offset != it.Result.Offset || fmt.Sprint(got.Tags) != fmt.Sprint(it.Options.Tags) {
			t.Errorf("%s: got data %s, offset %d, tags %v; want %s, %d, %v",
				it.Channel, got.Data, got.Offset, got.Tags, it.Data, it.Result.Offset, it.Options.Tags)
		}
	}
	if items[6].Result.Offset == 0 {
		t.Fatal("a channel with history got no offset")
	}
}
