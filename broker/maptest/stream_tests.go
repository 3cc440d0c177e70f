package maptest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
)

// streamChanges are the changes the stream tests make, as "key=data" or
// "-key".
var streamChanges = []string{"a=1", "b=1", "c=1", "a=2", "-b", "d=1", "c=2", "-a", "e=1", "b=2"}

// applyChanges makes changes ("key=data" writes, "-key" removals) and
// returns the position of the last.
func applyChanges(t testing.TB, n *node, ch string, mo broker.MapOptions, changes []string) broker.StreamPosition {
	t.Helper()
	var top broker.StreamPosition
	for _, c := range changes {
		if key, ok := strings.CutPrefix(c, "-"); ok {
			top = n.removed(t, ch, key, mo)
			continue
		}
		key, data, _ := strings.Cut(c, "=")
		top = n.write(t, ch, key, data, mo)
	}
	return top
}

// testStreamRead: the stream holds every change in offset order, removals
// as such, and reads by Since, Limit and Reverse as History does.
func testStreamRead(t *testing.T, e *env) {
	eachStreamMode(t, func(t *testing.T, mo broker.MapOptions) {
		ch := e.channel(t)
		top := applyChanges(t, e.node, ch, mo, streamChanges)
		at := func(o uint64) *broker.StreamPosition { return &broker.StreamPosition{Offset: o, Epoch: top.Epoch} }
		for _, tc := range []struct {
			f    broker.HistoryFilter
			want []uint64
		}{
			{broker.HistoryFilter{Limit: -1}, span(1, 10)},
			{broker.HistoryFilter{Limit: 3}, span(1, 3)},
			{broker.HistoryFilter{Limit: 0}, nil},
			{broker.HistoryFilter{Since: at(3), Limit: -1}, span(4, 10)},
			{broker.HistoryFilter{Since: at(3), Limit: 3}, span(4, 6)},
			{broker.HistoryFilter{Since: at(3), Limit: 0}, nil},
			{broker.HistoryFilter{Since: at(10), Limit: -1}, nil},
			{broker.HistoryFilter{Since: at(0), Limit: -1}, span(1, 10)},
			{broker.HistoryFilter{Reverse: true, Limit: 3}, span(10, 8)},
			{broker.HistoryFilter{Reverse: true, Limit: -1}, span(10, 1)},
			{broker.HistoryFilter{Reverse: true, Since: at(5), Limit: -1}, span(4, 1)},
			{broker.HistoryFilter{Reverse: true, Since: at(5), Limit: 2}, span(4, 3)},
			{broker.HistoryFilter{Reverse: true, Since: at(1), Limit: -1}, nil},
		} {
			res := e.stream(t, ch, mo, tc.f)
			what := fmt.Sprintf("filter %+v", tc.f)
			if tc.f.Since != nil {
				what = fmt.Sprintf("filter %+v since %d", tc.f, tc.f.Since.Offset)
			}
			if res.Position != top {
				t.Errorf("%s: at %+v, want %+v", what, res.Position, top)
			}
			checkOffsets(t, what, res.Pubs, tc.want...)
			for _, p := range res.Pubs {
				if want := streamChanges[p.Offset-1]; describe(*p) != want {
					t.Errorf("%s: offset %d holds %q, want %q", what, p.Offset, describe(*p), want)
				}
			}
		}
	})
}

// testStreamUnrecoverable: in every mode, Since of another epoch or past
// the top is ErrUnrecoverablePosition; at the top it is nothing.
func testStreamUnrecoverable(t *testing.T, e *env) {
	eachMode(t, func(t *testing.T, mo broker.MapOptions) {
		ch := e.channel(t)
		top := applyChanges(t, e.node, ch, mo, []string{"a=1", "b=1"})
		for _, tc := range []struct {
			what  string
			since broker.StreamPosition
		}{
			{"another epoch", broker.StreamPosition{Offset: 1, Epoch: top.Epoch + "-other"}},
			{"no epoch", broker.StreamPosition{Offset: 1}},
			{"past the top", broker.StreamPosition{Offset: top.Offset + 1, Epoch: top.Epoch}},
		} {
			for _, limit := range []int{-1, 0} {
				_, err := e.b.ReadStream(t.Context(), ch, broker.MapStreamOptions{Map: mo, Filter: broker.HistoryFilter{Since: &tc.since, Limit: limit}})
				wantErr(t, fmt.Sprintf("%s, limit %d", tc.what, limit), err, broker.ErrUnrecoverablePosition)
			}
		}
		res := e.stream(t, ch, mo, broker.HistoryFilter{Since: &top, Limit: -1})
		if len(res.Pubs) != 0 || res.Position != top {
			t.Errorf("since the top: %d changes at %+v, want none at %+v", len(res.Pubs), res.Position, top)
		}
	})
}

// testStreamSize: the stream keeps the last StreamSize changes; older
// ones are simply missing.
func testStreamSize(t *testing.T, e *env) {
	eachStreamMode(t, func(t *testing.T, mo broker.MapOptions) {
		mo.StreamSize = 5
		ch := e.channel(t)
		var top broker.StreamPosition
		for i := range 12 {
			top = e.write(t, ch, fmt.Sprint("k", i%4), fmt.Sprint(i), mo)
		}
		res := e.stream(t, ch, mo, broker.HistoryFilter{Limit: -1})
		checkOffsets(t, "whole stream", res.Pubs, span(8, 12)...)
		if res.Position != top {
			t.Errorf("stream at %+v, want %+v", res.Position, top)
		}
		since := broker.StreamPosition{Offset: 3, Epoch: top.Epoch}
		checkOffsets(t, "since 3", e.stream(t, ch, mo, broker.HistoryFilter{Since: &since, Limit: -1}).Pubs, span(8, 12)...)
		checkOffsets(t, "newest 2", e.stream(t, ch, mo, broker.HistoryFilter{Reverse: true, Limit: 2}).Pubs, 12, 11)
	})
}

// testStreamTTL: changes leave the stream after StreamTTL; the position
// and the state stay.
func testStreamTTL(t *testing.T, e *env) {
	eachStreamMode(t, func(t *testing.T, mo broker.MapOptions) {
		mo.StreamTTL = 200 * time.Millisecond
		ch := e.channel(t)
		top := applyChanges(t, e.node, ch, mo, []string{"a=1", "b=1", "c=1"})
		eventually(t, "the stream to expire", func() bool {
			return len(e.stream(t, ch, mo, broker.HistoryFilter{Limit: -1}).Pubs) == 0
		})
		if got := e.top(t, ch, mo); got != top {
			t.Errorf("stream at %+v after its changes expired, want %+v", got, top)
		}
		if n := e.stats(t, ch); n != 3 {
			t.Errorf("%d keys after the stream expired, want 3", n)
		}
	})
}

// testEphemeralNoStream: the ephemeral mode keeps no stream but counts
// offsets.
func testEphemeralNoStream(t *testing.T, e *env) {
	mo := ephemeral
	ch := e.channel(t)
	top := applyChanges(t, e.node, ch, mo, []string{"a=1", "b=1", "-a", "c=1"})
	if top.Offset != 4 {
		t.Errorf("fourth change at offset %d", top.Offset)
	}
	for _, f := range []broker.HistoryFilter{
		{Limit: -1},
		{Limit: -1, Reverse: true},
		{Limit: -1, Since: &broker.StreamPosition{Offset: 1, Epoch: top.Epoch}},
	} {
		res := e.stream(t, ch, mo, f)
		if len(res.Pubs) != 0 || res.Position != top {
			t.Errorf("filter %+v: %d changes at %+v, want none at %+v", f, len(res.Pubs), res.Position, top)
		}
	}
}

// testMetaTTL: once a channel has had no change or read for MetaTTL, it
// starts over: a new epoch at offset 0, no state, no stream.
func testMetaTTL(t *testing.T, e *env) {
	mo := recoverable
	mo.KeyTTL, mo.StreamTTL, mo.MetaTTL = 100*time.Millisecond, 200*time.Millisecond, 400*time.Millisecond
	ch := e.channel(t)
	first := e.write(t, ch, "a", "1", mo)
	e.rec.waitKey(t, ch, "a", true)
	var top broker.StreamPosition
	eventually(t, "the channel's meta to expire", func() bool {
		top = e.top(t, ch, mo)
		return top.Epoch != first.Epoch
	})
	if top.Offset != 0 || top.Epoch == "" {
		t.Errorf("after the meta expired: at %+v, want offset 0 in a new epoch", top)
	}
	if n := e.stats(t, ch); n != 0 {
		t.Errorf("%d keys after the meta expired", n)
	}
	if pubs := e.stream(t, ch, mo, broker.HistoryFilter{Limit: -1}).Pubs; len(pubs) != 0 {
		t.Errorf("stream holds %q after the meta expired", changes(pubs))
	}
	mo.KeyTTL = time.Hour
	if sp := e.write(t, ch, "b", "1", mo); sp.Epoch != top.Epoch || sp.Offset != 1 {
		t.Errorf("first change after the meta expired at %+v, want offset 1 in %q", sp, top.Epoch)
	}
}
