package brokertest

import (
	"errors"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
)

// publishN publishes n publications with opts and returns the last
// position.
func (e *streamEnv) publishN(ch string, n int, opts broker.PublishOptions) broker.StreamPosition {
	e.t.Helper()
	var sp broker.StreamPosition
	for range n {
		sp = e.publish(ch, "m", opts)
	}
	return sp
}

// testHistoryLimit: without Since, forward starts at the oldest, reverse
// at the newest; limit 0 returns none, negative all, positive at most
// that many.
func testHistoryLimit(t *testing.T, e *streamEnv) {
	ch := e.channel()
	top := e.publishN(ch, 5, withHistory)
	for _, tt := range []struct {
		name    string
		limit   int
		reverse bool
		want    []uint64
	}{
		{"Zero", 0, false, nil},
		{"ZeroReverse", 0, true, nil},
		{"All", -1, false, span(1, 5)},
		{"AllReverse", -1, true, span(5, 1)},
		{"Two", 2, false, span(1, 2)},
		{"TwoReverse", 2, true, span(5, 4)},
		{"MoreThanStored", 10, false, span(1, 5)},
		{"MoreThanStoredReverse", 10, true, span(5, 1)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pubs, got := e.history(ch, broker.HistoryFilter{Limit: tt.limit, Reverse: tt.reverse})
			checkOffsets(t, pubs, tt.want...)
			if got != top {
				t.Errorf("top = %+v, want %+v", got, top)
			}
		})
	}
}

// testHistorySince: Since is exclusive; forward returns what follows it,
// reverse what precedes it, newest first.
func testHistorySince(t *testing.T, e *streamEnv) {
	ch := e.channel()
	top := e.publishN(ch, 5, withHistory)
	for _, tt := range []struct {
		name    string
		since   uint64
		limit   int
		reverse bool
		want    []uint64
	}{
		{"FromStart", 0, -1, false, span(1, 5)},
		{"Middle", 2, -1, false, span(3, 5)},
		{"MiddleLimited", 2, 2, false, span(3, 4)},
		{"AtTop", 5, -1, false, nil},
		{"LimitZero", 2, 0, false, nil},
		{"ReverseAtTop", 5, -1, true, span(4, 1)},
		{"ReverseMiddle", 4, -1, true, span(3, 1)},
		{"ReverseMiddleLimited", 4, 2, true, span(3, 2)},
		{"ReverseAtFirst", 1, -1, true, nil},
		{"ReverseZero", 0, -1, true, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			since := &broker.StreamPosition{Offset: tt.since, Epoch: top.Epoch}
			pubs, got := e.history(ch, broker.HistoryFilter{Since: since, Limit: tt.limit, Reverse: tt.reverse})
			checkOffsets(t, pubs, tt.want...)
			if got != top {
				t.Errorf("top = %+v, want %+v", got, top)
			}
		})
	}
}

// testHistoryUnrecoverable: a Since from another epoch or past the top
// gives ErrUnrecoverablePosition, no publications and the current top.
func testHistoryUnrecoverable(t *testing.T, e *streamEnv) {
	ch := e.channel()
	top := e.publishN(ch, 3, withHistory)
	for _, tt := range []struct {
		name  string
		since broker.StreamPosition
		limit int
	}{
		{"PastTop", broker.StreamPosition{Offset: top.Offset + 1, Epoch: top.Epoch}, -1},
		{"OtherEpoch", broker.StreamPosition{Offset: 1, Epoch: top.Epoch + "x"}, -1},
		{"EmptyEpoch", broker.StreamPosition{Offset: 1}, -1},
		{"OtherEpochLimitZero", broker.StreamPosition{Offset: 1, Epoch: top.Epoch + "x"}, 0},
		{"FarPastTop", broker.StreamPosition{Offset: top.Offset + 5, Epoch: top.Epoch}, -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			since := tt.since
			pubs, got, err := e.streams.History(ch, broker.HistoryOptions{Filter: broker.HistoryFilter{Since: &since, Limit: tt.limit}})
			if !errors.Is(err, broker.ErrUnrecoverablePosition) {
				t.Fatalf("History since %+v: error %v, want ErrUnrecoverablePosition", tt.since, err)
			}
			if len(pubs) != 0 || got != top {
				t.Errorf("History since %+v: %d publications, top %+v; want none, %+v", tt.since, len(pubs), got, top)
			}
		})
	}
}

// testHistorySize: the stream keeps the newest HistorySize publications;
// a Since whose successors were evicted returns what is left without an
// error, and the gap shows in the first offset.
func testHistorySize(t *testing.T, e *streamEnv) {
	ch := e.channel()
	small := broker.PublishOptions{HistorySize: 3, HistoryTTL: time.Minute}
	top := e.publishN(ch, 5, small)
	pubs, _ := e.history(ch, broker.HistoryFilter{Limit: -1})
	checkOffsets(t, pubs, span(3, 5)...)

	since := &broker.StreamPosition{Offset: 1, Epoch: top.Epoch}
	pubs, got, err := e.streams.History(ch, broker.HistoryOptions{Filter: broker.HistoryFilter{Since: since, Limit: -1}})
	if err != nil {
		t.Fatalf("History since an evicted offset: %v", err)
	}
	checkOffsets(t, pubs, span(3, 5)...)
	if got != top {
		t.Errorf("top = %+v, want %+v", got, top)
	}

	t.Run("Shrink", func(t *testing.T) {
		tiny := broker.PublishOptions{HistorySize: 2, HistoryTTL: time.Minute}
		e.publish(ch, "m", tiny)
		pubs, _ := e.history(ch, broker.HistoryFilter{Limit: -1})
		checkOffsets(t, pubs, 5, 6)
	})
	t.Run("Grow", func(t *testing.T) {
		e.publishN(ch, 3, withHistory)
		pubs, _ := e.history(ch, broker.HistoryFilter{Limit: -1})
		checkOffsets(t, pubs, span(5, 9)...)
	})
}

// testHistoryTTL: publications leave history once their TTL passes; the
// stream position stays.
func testHistoryTTL(t *testing.T, e *streamEnv) {
	ch := e.channel()
	short := broker.PublishOptions{HistorySize: 10, HistoryTTL: 100 * time.Millisecond}
	top := e.publishN(ch, 3, short)
	eventually(t, "publications to expire", func() bool {
		pubs, _ := e.history(ch, broker.HistoryFilter{Limit: -1})
		return len(pubs) == 0
	})
	if _, got := e.history(ch, broker.HistoryFilter{}); got != top {
		t.Errorf("top after expiry = %+v, want %+v", got, top)
	}
	if sp := e.publish(ch, "m", withHistory); sp.Offset != top.Offset+1 || sp.Epoch != top.Epoch {
		t.Errorf("publish after expiry = %+v, want offset %d epoch %q", sp, top.Offset+1, top.Epoch)
	}
}

// testMetaTTL: once the meta TTL passes with no publish or History call,
// the stream is lost: a new epoch, offsets from 1 again.
func testMetaTTL(t *testing.T, e *streamEnv) {
	ch := e.channel()
	const metaTTL = 200 * time.Millisecond
	opts := broker.PublishOptions{HistorySize: 10, HistoryTTL: 100 * time.Millisecond, HistoryMetaTTL: metaTTL}
	old := e.publishN(ch, 2, opts)
	var top broker.StreamPosition
	eventually(t, "the stream to be lost", func() bool {
		pubs, sp, err := e.streams.History(ch, broker.HistoryOptions{Filter: broker.HistoryFilter{Limit: -1}, MetaTTL: metaTTL})
		if err != nil {
			t.Fatalf("History: %v", err)
		}
		top = sp
		if sp.Epoch == old.Epoch && sp.Offset != old.Offset {
			t.Fatalf("History top %+v: offset moved within epoch of %+v", sp, old)
		}
		return sp.Epoch != old.Epoch && len(pubs) == 0
	})
	if top.Offset != 0 || top.Epoch == "" {
		t.Errorf("new stream top = %+v, want offset 0 and an epoch", top)
	}
	if sp := e.publish(ch, "m", opts); sp.Offset != 1 || sp.Epoch != top.Epoch {
		t.Errorf("publish to the new stream = %+v, want offset 1 epoch %q", sp, top.Epoch)
	}
}
