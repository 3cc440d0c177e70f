package maptest

import (
	"slices"
	"testing"

	"github.com/gyrehq/gyre/broker"
)

// testFirstRead: reading an unknown channel gives it an epoch at offset
// 0, and its first change takes offset 1 in that epoch, whichever read
// came first.
func testFirstRead(t *testing.T, e *env) {
	eachMode(t, func(t *testing.T, mo broker.MapOptions) {
		ch := e.channel(t)
		res := e.state(t, ch, broker.MapStateOptions{Map: mo, Limit: -1})
		if len(res.Entries) != 0 || res.Cursor != "" {
			t.Errorf("state of a new channel: %d entries, cursor %q", len(res.Entries), res.Cursor)
		}
		if res.Position.Offset != 0 || res.Position.Epoch == "" {
			t.Fatalf("state of a new channel at %+v, want offset 0 and an epoch", res.Position)
		}
		if top := e.top(t, ch, mo); top != res.Position {
			t.Errorf("stream top %+v after the state read %+v", top, res.Position)
		}
		if sp := e.write(t, ch, "a", "1", mo); sp != (broker.StreamPosition{Offset: 1, Epoch: res.Position.Epoch}) {
			t.Errorf("first change at %+v, want offset 1 in epoch %q", sp, res.Position.Epoch)
		}

		ch = e.channel(t)
		top := e.top(t, ch, mo)
		if top.Offset != 0 || top.Epoch == "" {
			t.Fatalf("stream top of a new channel %+v, want offset 0 and an epoch", top)
		}
		if sp := e.write(t, ch, "a", "1", mo); sp != (broker.StreamPosition{Offset: 1, Epoch: top.Epoch}) {
			t.Errorf("first change at %+v, want offset 1 in epoch %q", sp, top.Epoch)
		}
	})
}

// testOffsets: writes and removals take consecutive offsets in one
// epoch, suppressed ones none; state entries carry the offset of the
// change that wrote them; deliveries and the stream agree.
func testOffsets(t *testing.T, e *env) {
	eachMode(t, func(t *testing.T, mo broker.MapOptions) {
		ch := e.channel(t)
		var got []broker.StreamPosition
		got = append(got, e.write(t, ch, "a", "1", mo), e.write(t, ch, "b", "1", mo), e.write(t, ch, "a", "2", mo), e.removed(t, ch, "b", mo))
		top := got[len(got)-1]
		wantSuppressed(t, "removing a missing key", e.remove(t, ch, "zz", broker.MapRemoveOptions{Map: mo}), broker.SuppressKeyNotFound, top)
		wantSuppressed(t, "if_new on a key that exists", e.publish(t, ch, "a", broker.MapPublishOptions{Map: mo, Data: []byte("x"), KeyMode: broker.KeyModeIfNew}), broker.SuppressKeyExists, top)
		got = append(got, e.write(t, ch, "c", "1", mo))
		epoch := got[0].Epoch
		for i, sp := range got {
			if want := (broker.StreamPosition{Offset: uint64(i + 1), Epoch: epoch}); sp != want {
				t.Errorf("change %d at %+v, want %+v", i+1, sp, want)
			}
		}

		state := e.state(t, ch, broker.MapStateOptions{Map: mo, Limit: -1})
		if state.Position != got[4] {
			t.Errorf("state at %+v, want %+v", state.Position, got[4])
		}
		entries := sortByKey(state.Entries)
		if k := keys(entries); !slices.Equal(k, []string{"a", "c"}) {
			t.Fatalf("state keys %q, want [a c]", k)
		}
		checkOffsets(t, "state entries", entries, 3, 5)

		want := []string{"a=1", "b=1", "a=2", "-b", "c=1"}
		ds := e.rec.waitPubs(t, ch, len(want))
		if d := deliveredChanges(ds); !slices.Equal(d, want) {
			t.Errorf("delivered %q, want %q", d, want)
		}
		for i, d := range ds {
			if d.sp != got[i] || d.pub.Offset != got[i].Offset {
				t.Errorf("delivery %d at %+v with offset %d, want %+v", i, d.sp, d.pub.Offset, got[i])
			}
		}
		if mo.Mode.HasStream() {
			pubs := e.stream(t, ch, mo, broker.HistoryFilter{Limit: -1}).Pubs
			if c := changes(pubs); !slices.Equal(c, want) {
				t.Errorf("stream holds %q, want %q", c, want)
			}
			checkOffsets(t, "stream", pubs, span(1, 5)...)
		}
	})
}

// testChannelsIsolated: each channel has its own offsets, state and
// deliveries.
func testChannelsIsolated(t *testing.T, e *env) {
	eachMode(t, func(t *testing.T, mo broker.MapOptions) {
		ch1, ch2 := e.channel(t), e.channel(t)
		e.write(t, ch1, "a", "1", mo)
		e.write(t, ch1, "b", "1", mo)
		if sp := e.write(t, ch2, "a", "2", mo); sp.Offset != 1 {
			t.Errorf("first change of a second channel at offset %d, want 1", sp.Offset)
		}
		if n := e.stats(t, ch2); n != 1 {
			t.Errorf("second channel has %d keys, want 1", n)
		}
		if got := deliveredChanges(e.rec.waitPubs(t, ch2, 1)); !slices.Equal(got, []string{"a=2"}) {
			t.Errorf("second channel delivered %q, want [a=2]", got)
		}
		if got := deliveredChanges(e.marker(t, ch1, mo)); !slices.Equal(got, []string{"a=1", "b=1"}) {
			t.Errorf("first channel delivered %q, want [a=1 b=1]", got)
		}
	})
}
