package jetstream

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	js "github.com/nats-io/nats.go/jetstream"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/nats/natstest"
)

// messagesOf counts the messages the channel has in the stream of ttl.
func messagesOf(t *testing.T, s *Store, channel string, ttl time.Duration) uint64 {
	t.Helper()
	r, err := s.historyStream(ttl)
	if err != nil {
		t.Fatal(err)
	}
	subj := r.subject(channel)
	info, err := r.s.Info(context.Background(), js.WithSubjectFilter(subj))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects[subj]
}

func appendAll(t *testing.T, s *Store, items []broker.StoreItem) {
	t.Helper()
	s.Append(items)
	for i, it := range items {
		if it.Err != nil {
			t.Fatalf("item %d (%s): %v", i, it.Channel, it.Err)
		}
	}
}

// TestRunOfHundred: 100 publications of a channel in one Append (between
// other channels' items) are one message, which every kind of History
// query reads back.
func TestRunOfHundred(t *testing.T) {
	srv := natstest.Start(t)
	s := newStore(t, srv.URL)
	opts := broker.PublishOptions{HistorySize: 1000, HistoryTTL: time.Minute}
	var items []broker.StoreItem
	for i := range 100 {
		items = append(items, item("run", "p"+strconv.Itoa(i+1), opts), item("other"+strconv.Itoa(i%3), "n", opts))
	}
	appendAll(t, s, items)
	if n := messagesOf(t, s, "run", opts.HistoryTTL); n != 1 {
		t.Fatalf("%d messages, want 1", n)
	}
	for i := 0; i < len(items); i += 2 {
		if want := uint64(i/2 + 1); items[i].Position.Offset != want {
			t.Fatalf("item %d: offset %d, want %d", i, items[i].Position.Offset, want)
		}
	}
	s2 := newStore(t, srv.URL) // nothing cached
	for _, st := range []*Store{s, s2} {
		pubs, top := history(t, st, "run", broker.HistoryFilter{Limit: -1})
		if got := offsets(pubs); top.Offset != 100 || !slices.Equal(got, seq(1, 100)) {
			t.Fatalf("all: top %+v, %v", top, got)
		}
		for _, p := range pubs {
			if string(p.Data) != "p"+strconv.FormatUint(p.Offset, 10) || p.Time == 0 {
				t.Fatalf("publication %+v", p)
			}
		}
		checkEverySince(t, st, "run", 1)
	}
}

// checkEverySince reads the channel after every offset, forward and
// backward, with and without limit, expecting offsets floor..top.
func checkEverySince(t *testing.T, s *Store, channel string, floor uint64) {
	t.Helper()
	_, top := history(t, s, channel, broker.HistoryFilter{})
	for _, limit := range []int{1, 7, -1} {
		for since := uint64(0); since <= top.Offset; since++ {
			sp := broker.StreamPosition{Offset: since, Epoch: top.Epoch}
			pubs, _ := history(t, s, channel, broker.HistoryFilter{Since: &sp, Limit: limit})
			from := max(since+1, floor)
			to := top.Offset
			if limit > 0 {
				to = min(to, from+uint64(limit)-1)
			}
			if got := offsets(pubs); !slices.Equal(got, seq(from, to)) {
				t.Fatalf("since %d limit %d: %v, want %d..%d", since, limit, got, from, to)
			}
			pubs, _ = history(t, s, channel, broker.HistoryFilter{Since: &sp, Limit: limit, Reverse: true})
			var want []uint64
			for o := int(since) - 1; o >= int(floor) && (limit < 0 || len(want) < limit); o-- {
				want = append(want, uint64(o))
			}
			if got := offsets(pubs); !slices.Equal(got, want) {
				t.Fatalf("reverse since %d limit %d: %v, want %v", since, limit, got, want)
			}
		}
		pubs, _ := history(t, s, channel, broker.HistoryFilter{Limit: limit, Reverse: true})
		var want []uint64
		for o := top.Offset; o >= floor && o > 0 && (limit < 0 || len(want) < limit); o-- {
			want = append(want, o)
		}
		if got := offsets(pubs); !slices.Equal(got, want) {
			t.Fatalf("reverse limit %d: %v, want %v", limit, got, want)
		}
	}
}

// TestRunsSpreadUnevenly reads after every offset of a channel stored as
// runs of varied lengths, spread unevenly through the stream, so that the
// search for the start and the gathering of the rest cross runs.
func TestRunsSpreadUnevenly(t *testing.T) {
	srv := natstest.Start(t)
	s := newStore(t, srv.URL)
	opts := broker.PublishOptions{HistorySize: 1000, HistoryTTL: time.Minute}
	n := 0
	for i := range 25 {
		var items []broker.StoreItem
		for range i%4 + 1 {
			n++
			items = append(items, item("seek", strconv.Itoa(n), opts))
		}
		for j := range (i * 7) % 11 {
			items = append(items, item("noise"+strconv.Itoa(j), "n", opts))
		}
		appendAll(t, s, items)
	}
	if m := messagesOf(t, s, "seek", opts.HistoryTTL); m != 25 {
		t.Fatalf("%d messages, want 25", m)
	}
	checkEverySince(t, newStore(t, srv.URL), "seek", 1)
}

// TestRunStraddlesHistorySize: the floor falls inside runs; History
// starts at it, and trimming keeps what it needs.
func TestRunStraddlesHistorySize(t *testing.T) {
	srv := natstest.Start(t)
	s := newStore(t, srv.URL)
	opts := broker.PublishOptions{HistorySize: 10, HistoryTTL: time.Minute}
	n := 0
	for range 10 {
		var items []broker.StoreItem
		for range 7 {
			n++
			items = append(items, item("straddle", strconv.Itoa(n), opts), item("noise", "n", opts))
		}
		appendAll(t, s, items)
		pubs, top := history(t, s, "straddle", broker.HistoryFilter{Limit: -1})
		from := uint64(max(1, n-9))
		if got := offsets(pubs); top.Offset != uint64(n) || !slices.Equal(got, seq(from, uint64(n))) {
			t.Fatalf("after %d: top %+v, %v", n, top, got)
		}
	}
	checkEverySince(t, newStore(t, srv.URL), "straddle", uint64(n-9))
	// Everything before the run holding the floor goes once the channel
	// passes a multiple of trimEvery.
	deadline := time.Now().Add(5 * time.Second)
	for messagesOf(t, s, "straddle", opts.HistoryTTL) > 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d messages kept", messagesOf(t, s, "straddle", opts.HistoryTTL))
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A HistorySize that shrinks inside the run drops at once what is
	// below its new floor.
	small := opts
	small.HistorySize = 3
	appendAll(t, s, []broker.StoreItem{item("straddle", "a", opts), item("straddle", "b", small)})
	pubs, _ := history(t, s, "straddle", broker.HistoryFilter{Limit: -1})
	if got := offsets(pubs); !slices.Equal(got, seq(uint64(n), uint64(n+2))) {
		t.Fatalf("after shrinking: %v", got)
	}
}

// TestConcurrentRuns: runs of two stores (several appenders each) on one
// channel interleave as whole runs, with contiguous offsets.
func TestConcurrentRuns(t *testing.T) {
	srv := natstest.Start(t)
	stores := []*Store{newStore(t, srv.URL), newStore(t, srv.URL)}
	opts := broker.PublishOptions{HistorySize: 10000, HistoryTTL: time.Minute}
	const batches, workers = 15, 2
	var mu sync.Mutex
	var runs [][]broker.StoreItem
	var wg sync.WaitGroup
	for si, s := range stores {
		for w := range workers {
			wg.Go(func() {
				for b := range batches {
					items := make([]broker.StoreItem, 5+(b*3)%17)
					for i := range items {
						items[i] = item("hot", fmt.Sprint(si, w, b, i), opts)
					}
					s.Append(items)
					mu.Lock()
					runs = append(runs, items)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	byOffset := map[uint64]string{}
	var total uint64
	for _, items := range runs {
		for i, it := range items {
			if it.Err != nil || it.Suppressed {
				t.Fatalf("item %q: %v, suppressed %v", it.Data, it.Err, it.Suppressed)
			}
			if it.Position.Offset != items[0].Position.Offset+uint64(i) || it.Position.Epoch != items[0].Position.Epoch {
				t.Fatalf("run split: item %d at %+v, first at %+v", i, it.Position, items[0].Position)
			}
			if _, dup := byOffset[it.Position.Offset]; dup {
				t.Fatalf("offset %d given twice", it.Position.Offset)
			}
			byOffset[it.Position.Offset] = string(it.Data)
			total++
		}
	}
	pubs, top := history(t, stores[0], "hot", broker.HistoryFilter{Limit: -1})
	if top.Offset != total || len(pubs) != int(total) {
		t.Fatalf("top %+v, %d publications, want %d", top, len(pubs), total)
	}
	for i, p := range pubs {
		if p.Offset != uint64(i+1) || string(p.Data) != byOffset[p.Offset] {
			t.Fatalf("publication %d: offset %d %q, want %q", i, p.Offset, p.Data, byOffset[p.Offset])
		}
	}
	if m := messagesOf(t, stores[0], "hot", opts.HistoryTTL); m != uint64(len(runs)) {
		t.Fatalf("%d messages for %d runs", m, len(runs))
	}
}

// TestSuppressedInRun: items that are suppressed (a stale version, a
// repeated idempotency key) are left out of the runs around them.
func TestSuppressedInRun(t *testing.T) {
	srv := natstest.Start(t)
	s := newStore(t, srv.URL)
	v := func(version uint64) broker.PublishOptions {
		o := hist
		o.Version, o.VersionEpoch = version, "e"
		return o
	}
	key := func(k string) broker.PublishOptions {
		o := hist
		o.IdempotencyKey = k
		return o
	}
	d := hist
	d.UseDelta = true
	items := []broker.StoreItem{
		item("sup", "1", v(1)), item("sup", "2", v(2)), item("sup", "stale", v(2)), item("sup", "3", v(3)),
		item("sup", "4", key("k")), item("sup", "5", d), item("sup", "again", key("k")), item("sup", "6", d),
		item("sup", "stale2", v(1)), item("sup", "7", hist),
	}
	appendAll(t, s, items)
	suppressed := map[int]uint64{2: 2, 6: 4, 8: 6} // item: position it answers with
	next := uint64(1)
	for i, it := range items {
		if at, ok := suppressed[i]; ok {
			if !it.Suppressed || it.Position.Offset != at {
				t.Fatalf("item %d: suppressed %v at %+v, want at %d", i, it.Suppressed, it.Position, at)
			}
			continue
		}
		if it.Suppressed || it.Position.Offset != next {
			t.Fatalf("item %d: suppressed %v at %+v, want offset %d", i, it.Suppressed, it.Position, next)
		}
		next++
	}
	if items[5].Prev == nil || string(items[5].Prev.Data) != "4" || items[7].Prev == nil || string(items[7].Prev.Data) != "5" {
		t.Fatalf("prev: %+v, %+v", items[5].Prev, items[7].Prev)
	}
	pubs, _ := history(t, s, "sup", broker.HistoryFilter{Limit: -1})
	var data []string
	for _, p := range pubs {
		data = append(data, string(p.Data))
	}
	if want := []string{"1", "2", "3", "4", "5", "6", "7"}; !slices.Equal(data, want) {
		t.Fatalf("history %v, want %v", data, want)
	}
}

// TestRunBounds: a run stops at maxRunItems items and at maxRunBytes of
// body; the channel's offsets go on across its messages.
func TestRunBounds(t *testing.T) {
	srv := natstest.Start(t)
	s := newStore(t, srv.URL)
	opts := broker.PublishOptions{HistorySize: 1000, HistoryTTL: time.Minute}
	big := string(make([]byte, 10<<10))
	items := make([]broker.StoreItem, 250)
	for i := range items {
		items[i] = item("big", big, opts)
	}
	appendAll(t, s, items)
	perMsg := maxRunBytes / (len(big) + 20) // 20: the length and protobuf framing, about
	want := uint64((len(items) + perMsg - 1) / perMsg)
	if m := messagesOf(t, s, "big", opts.HistoryTTL); m != want || perMsg >= maxRunItems {
		t.Fatalf("%d messages, want %d", m, want)
	}
	small := make([]broker.StoreItem, 250)
	for i := range small {
		small[i] = item("small", "x", opts)
	}
	appendAll(t, s, small)
	if m := messagesOf(t, s, "small", opts.HistoryTTL); m != 3 {
		t.Fatalf("%d messages of small items, want 3", m)
	}
	pubs, top := history(t, newStore(t, srv.URL), "big", broker.HistoryFilter{Limit: -1})
	if got := offsets(pubs); top.Offset != 250 || !slices.Equal(got, seq(1, 250)) {
		t.Fatalf("top %+v, %v", top, got)
	}
	for _, p := range pubs {
		if string(p.Data) != big {
			t.Fatalf("publication %d: %d bytes", p.Offset, len(p.Data))
		}
	}
}
