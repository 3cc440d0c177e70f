package maptest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
)

// testNodesDelivery: every subscribed node receives each change once, in
// the same order at the same positions, whichever node made it; a node
// that unsubscribed receives nothing meanwhile.
func testNodesDelivery(t *testing.T, e *env) {
	eachMode(t, func(t *testing.T, mo broker.MapOptions) {
		a, b := e.node, e.secondNode(t)
		ch := uniqueChannel(t)
		a.subscribe(t, ch)
		b.subscribe(t, ch)
		applyChanges(t, a, ch, mo, []string{"x=1", "y=1"})
		applyChanges(t, b, ch, mo, []string{"-x", "z=1"})
		want := []string{"x=1", "y=1", "-x", "z=1"}
		da, db := a.rec.waitPubs(t, ch, len(want)), b.rec.waitPubs(t, ch, len(want))
		for i := range want {
			if describe(da[i].pub) != want[i] || describe(db[i].pub) != want[i] || da[i].sp != db[i].sp || da[i].sp.Offset != uint64(i+1) {
				t.Errorf("change %d: node a got %s at %+v, node b %s at %+v; want %s at offset %d", i, describe(da[i].pub), da[i].sp, describe(db[i].pub), db[i].sp, want[i], i+1)
			}
		}
		b.unsubscribe(t, ch)
		a.write(t, ch, "w", "1", mo)
		b.subscribe(t, ch)
		if got := deliveredChanges(a.markerSeenBy(t, ch, mo, b)[0]); !slices.Equal(got, want) {
			t.Errorf("node b got %q, want %q: it was unsubscribed when w was written", got, want)
		}
	})
}

// testNodesState: nodes share state, stream, epoch, idempotency results
// and versions; Clear on one clears for all.
func testNodesState(t *testing.T, e *env) {
	eachMode(t, func(t *testing.T, mo broker.MapOptions) {
		a, b := e.node, e.secondNode(t)
		ch := uniqueChannel(t)
		want := stateKeys(50, "k")
		top := writeShuffled(t, a, ch, mo, want)
		checkAllOnce(t, sortByKey(b.allState(t, ch, mo, 10)), want)
		if got := b.top(t, ch, mo); got != top {
			t.Errorf("node b reads the top %+v, node a wrote %+v", got, top)
		}
		if mo.Mode.HasStream() {
			checkOffsets(t, "node b's stream", b.stream(t, ch, mo, broker.HistoryFilter{Limit: -1}).Pubs, span(1, 50)...)
		}
		first := a.written(t, ch, "i", broker.MapPublishOptions{Map: mo, Data: []byte("1"), IdempotencyKey: "i", Version: 3})
		wantSuppressed(t, "idempotency key of the other node", b.publish(t, ch, "i", broker.MapPublishOptions{Map: mo, Data: []byte("2"), IdempotencyKey: "i"}), broker.SuppressIdempotency, first)
		wantSuppressed(t, "version of the other node", b.publish(t, ch, "i", broker.MapPublishOptions{Map: mo, Data: []byte("2"), Version: 2}), broker.SuppressVersion, first)
		if n := b.stats(t, ch); n != 51 {
			t.Errorf("node b counts %d keys, want 51", n)
		}
		b.clear(t, ch)
		if got := a.top(t, ch, mo); got.Epoch == top.Epoch || got.Offset != 0 {
			t.Errorf("node a reads %+v after node b cleared the channel at %+v", got, top)
		}
	})
}

// testNodesExpiryOnce: with several nodes each expiry is one change,
// delivered once to each subscribed node.
func testNodesExpiryOnce(t *testing.T, e *env) {
	eachExpiringMode(t, 200*time.Millisecond, func(t *testing.T, mo broker.MapOptions) {
		a, b := e.node, e.secondNode(t)
		ch := uniqueChannel(t)
		a.subscribe(t, ch)
		b.subscribe(t, ch)
		const n = 5
		for i := range n {
			a.write(t, ch, fmt.Sprint("k", i), "1", mo)
		}
		for i := range n {
			a.rec.waitKey(t, ch, fmt.Sprint("k", i), true)
		}
		mo.KeyTTL = time.Hour
		for _, ds := range a.markerSeenBy(t, ch, mo, a, b) {
			removals := 0
			for i, d := range ds {
				if d.sp.Offset != uint64(i+1) {
					t.Errorf("delivery %d at offset %d", i, d.sp.Offset)
				}
				if d.pub.Removed {
					removals++
				}
			}
			if len(ds) != 2*n || removals != n {
				t.Errorf("a node got %q; want each of %d keys written and removed once", deliveredChanges(ds), n)
			}
		}
		if mo.Mode.HasStream() {
			pubs := a.stream(t, ch, mo, broker.HistoryFilter{Limit: -1}).Pubs
			checkOffsets(t, "stream", pubs, span(1, 2*n+1)...)
		}
	})
}
