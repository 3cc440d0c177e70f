package maptest

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/internal/suitekit"
)

// testDeliveryFields: a write is delivered with what was written at its
// position; a removal with the key, Removed, no data, the removed
// entry's tags and the remover's info.
func testDeliveryFields(t *testing.T, e *env) {
	eachMode(t, func(t *testing.T, mo broker.MapOptions) {
		ch := e.channel(t)
		opts := fullOpts(mo, "v")
		written := e.written(t, ch, "k", opts)
		remover := &broker.ClientInfo{ClientID: "client-2", UserID: "user-2"}
		res := e.remove(t, ch, "k", broker.MapRemoveOptions{Map: mo, ClientInfo: remover})
		if res.Suppressed || res.Position != (broker.StreamPosition{Offset: written.Offset + 1, Epoch: written.Epoch}) {
			t.Fatalf("removal: %+v, want the next offset after %+v", res, written)
		}
		ds := e.rec.waitPubs(t, ch, 2)
		w, r := ds[0], ds[1]
		if w.pub.Key != "k" || string(w.pub.Data) != "v" || w.pub.Removed || w.sp != written || w.pub.Offset != written.Offset || w.delta || w.prev != nil {
			t.Errorf("write delivered as %+v at %+v (delta %v, prev %v)", w.pub, w.sp, w.delta, w.prev)
		}
		p := r.pub
		if p.Key != "k" || !p.Removed || len(p.Data) != 0 || r.sp != res.Position || p.Offset != res.Position.Offset || r.delta || r.prev != nil {
			t.Errorf("removal delivered as %+v at %+v (delta %v, prev %v), want key k removed at %+v", p, r.sp, r.delta, r.prev, res.Position)
		}
		if !maps.Equal(p.Tags, opts.Tags) {
			t.Errorf("removal carries tags %v, want the entry's %v", p.Tags, opts.Tags)
		}
		if p.Info == nil || p.Info.ClientID != remover.ClientID || p.Info.UserID != remover.UserID {
			t.Errorf("removal carries info %+v, want %+v", p.Info, remover)
		}
		if p.Time == 0 {
			t.Error("removal carries no time")
		}
	})
}

// testDeliveryOrder: changes from concurrent writers reach a subscribed
// node once each, in offset order, with consecutive offsets, as the
// stream holds them.
func testDeliveryOrder(t *testing.T, e *env) {
	eachMode(t, func(t *testing.T, mo broker.MapOptions) {
		const writers, each = 4, 50
		ch := e.channel(t)
		suitekit.Publishers(t, writers, each, func(w, i int) error {
			key := fmt.Sprintf("w%d-k%d", w, i%5)
			_, err := e.b.Publish(t.Context(), ch, key, broker.MapPublishOptions{Map: mo, Data: fmt.Appendf(nil, "%d-%d", w, i)})
			return err
		})
		ds := e.rec.waitPubs(t, ch, writers*each)
		order := suitekit.PublisherOrder{}
		for i, d := range ds {
			if want := uint64(i + 1); d.pub.Offset != want || d.sp.Offset != want || d.sp.Epoch != ds[0].sp.Epoch {
				t.Fatalf("delivery %d at %+v with offset %d, want offset %d in one epoch", i, d.sp, d.pub.Offset, want)
			}
			order.Check(t, ch, d.pub.Data)
		}
		if got := deliveredChanges(e.marker(t, ch, mo)); len(got) != writers*each {
			t.Errorf("%d changes delivered, want %d", len(got), writers*each)
		}
		if mo.Mode.HasStream() {
			pubs := e.stream(t, ch, mo, broker.HistoryFilter{Limit: writers * each})
			if got, want := changes(pubs.Pubs), deliveredChanges(ds); !slices.Equal(got, want) {
				t.Errorf("the stream and the deliveries differ")
			}
		}
	})
}

// testNotDeliveredUnsubscribed: changes made while this node is not
// subscribed to the channel do not reach it; those after Subscribe do.
func testNotDeliveredUnsubscribed(t *testing.T, e *env) {
	eachMode(t, func(t *testing.T, mo broker.MapOptions) {
		ch := uniqueChannel(t)
		e.write(t, ch, "before", "1", mo)
		e.subscribe(t, ch)
		if got := deliveredChanges(e.marker(t, ch, mo)); len(got) != 0 {
			t.Errorf("delivered %q before the node subscribed", got)
		}
		e.unsubscribe(t, ch)
		e.write(t, ch, "during", "1", mo)
		e.removed(t, ch, "before", mo)
		e.subscribe(t, ch)
		if got := deliveredChanges(e.marker(t, ch, mo)); len(got) != 1 || !strings.HasPrefix(got[0], "marker-") {
			t.Errorf("delivered %q besides the first marker while the node was unsubscribed", got)
		}
	})
}

// testSuppressedNotDelivered: a suppressed write or removal is not
// delivered.
func testSuppressedNotDelivered(t *testing.T, e *env) {
	eachMode(t, func(t *testing.T, mo broker.MapOptions) {
		ch := e.channel(t)
		e.written(t, ch, "a", broker.MapPublishOptions{Map: mo, Data: []byte("1"), IdempotencyKey: "i"})
		e.written(t, ch, "v", broker.MapPublishOptions{Map: mo, Data: []byte("5"), Version: 5})
		for _, res := range []broker.MapUpdateResult{
			e.publish(t, ch, "a", broker.MapPublishOptions{Map: mo, Data: []byte("2"), IdempotencyKey: "i"}),
			e.publish(t, ch, "a", broker.MapPublishOptions{Map: mo, Data: []byte("3"), KeyMode: broker.KeyModeIfNew}),
			e.publish(t, ch, "b", broker.MapPublishOptions{Map: mo, Data: []byte("1"), KeyMode: broker.KeyModeIfExists}),
			e.publish(t, ch, "v", broker.MapPublishOptions{Map: mo, Data: []byte("4"), Version: 4}),
			e.remove(t, ch, "b", broker.MapRemoveOptions{Map: mo}),
		} {
			if !res.Suppressed {
				t.Fatalf("not suppressed: %+v", res)
			}
		}
		if got := deliveredChanges(e.marker(t, ch, mo)); !slices.Equal(got, []string{"a=1", "v=5"}) {
			t.Errorf("delivered %q, want [a=1 v=5]", got)
		}
	})
}

// testDelta: a write with UseDelta is handed over with Delta set and the
// key's previous value (not the channel's previous change) in Prev, nil
// for a new key or one removed since; without UseDelta neither.
func testDelta(t *testing.T, e *env) {
	eachMode(t, func(t *testing.T, mo broker.MapOptions) {
		ch := e.channel(t)
		delta := func(key, data string) {
			t.Helper()
			e.written(t, ch, key, broker.MapPublishOptions{Map: mo, Data: []byte(data), UseDelta: true})
		}
		delta("a", "a1")
		e.write(t, ch, "b", "b1", mo)
		delta("a", "a2")
		delta("b", "b2")
		e.write(t, ch, "a", "a3", mo)
		e.removed(t, ch, "a", mo)
		delta("a", "a4")
		want := []struct {
			delta bool
			prev  string // "" for none
		}{{true, ""}, {false, ""}, {true, "a1"}, {true, "b1"}, {false, ""}, {false, ""}, {true, ""}}
		ds := e.rec.waitPubs(t, ch, len(want))
		for i, w := range want {
			d := ds[i]
			prev := ""
			if d.prev != nil {
				prev = string(d.prev.Data)
				if d.prev.Key != d.pub.Key {
					t.Errorf("%s: prev of key %q", describe(d.pub), d.prev.Key)
				}
			}
			if d.delta != w.delta || prev != w.prev || (d.prev == nil) != (w.prev == "") {
				t.Errorf("%s: delta %v prev %q, want delta %v prev %q", describe(d.pub), d.delta, prev, w.delta, w.prev)
			}
		}
	})
}
