package jetstream

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/brokertest"
	"github.com/gyrehq/gyre/broker/nats/natstest"
)

var hist = broker.PublishOptions{HistorySize: 100, HistoryTTL: time.Minute}

func newStore(t testing.TB, url string) *Store {
	t.Helper()
	s, err := New(Config{URL: url, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func item(channel, data string, opts broker.PublishOptions) broker.StoreItem {
	return broker.StoreItem{PublishItem: broker.PublishItem{Channel: channel, Data: []byte(data), Opts: opts}, Time: time.Now().UnixMilli()}
}

// appendOne appends one item and fails the test on error.
func appendOne(t testing.TB, s *Store, channel, data string, opts broker.PublishOptions) broker.StoreItem {
	t.Helper()
	items := []broker.StoreItem{item(channel, data, opts)}
	s.Append(items)
	if items[0].Err != nil {
		t.Fatalf("append to %q: %v", channel, items[0].Err)
	}
	return items[0]
}

func history(t testing.TB, s *Store, channel string, f broker.HistoryFilter) ([]*broker.Publication, broker.StreamPosition) {
	t.Helper()
	pubs, top, err := s.History(channel, broker.HistoryOptions{Filter: f})
	if err != nil {
		t.Fatalf("history of %q: %v", channel, err)
	}
	return pubs, top
}

func offsets(pubs []*broker.Publication) []uint64 {
	out := make([]uint64, len(pubs))
	for i, p := range pubs {
		out[i] = p.Offset
	}
	return out
}

func seq(from, to uint64) []uint64 {
	var out []uint64
	for o := from; o <= to; o++ {
		out = append(out, o)
	}
	return out
}

func TestAppendOrderAndHistory(t *testing.T) {
	srv := natstest.Start(t)
	s := newStore(t, srv.URL)
	var items []broker.StoreItem
	for i := range 10 {
		items = append(items, item("a", "a"+strconv.Itoa(i), hist), item("b", "b"+strconv.Itoa(i), hist))
	}
	s.Append(items)
	epochs := map[string]string{}
	for i, it := range items {
		if it.Err != nil || it.Suppressed {
			t.Fatalf("item %d: err %v suppressed %v", i, it.Err, it.Suppressed)
		}
		if want := uint64(i/2 + 1); it.Position.Offset != want {
			t.Fatalf("item %d (%s): offset %d, want %d", i, it.Channel, it.Position.Offset, want)
		}
		if e, ok := epochs[it.Channel]; ok && e != it.Position.Epoch {
			t.Fatalf("channel %s: epoch changed from %q to %q", it.Channel, e, it.Position.Epoch)
		}
		epochs[it.Channel] = it.Position.Epoch
	}
	pubs, top := history(t, s, "a", broker.HistoryFilter{Limit: -1})
	if top != (broker.StreamPosition{Offset: 10, Epoch: epochs["a"]}) {
		t.Fatalf("top %+v", top)
	}
	if got := offsets(pubs); !slices.Equal(got, seq(1, 10)) {
		t.Fatalf("all: %v", got)
	}
	if string(pubs[3].Data) != "a3" || pubs[3].Time == 0 {
		t.Fatalf("publication 4: %+v", pubs[3])
	}
	since := func(o uint64) *broker.StreamPosition { return &broker.StreamPosition{Offset: o, Epoch: epochs["a"]} }
	for _, tc := range []struct {
		name string
		f    broker.HistoryFilter
		want []uint64
	}{
		{"since", broker.HistoryFilter{Since: since(4), Limit: -1}, seq(5, 10)},
		{"since limit", broker.HistoryFilter{Since: since(4), Limit: 3}, seq(5, 7)},
		{"since top", broker.HistoryFilter{Since: since(10), Limit: -1}, nil},
		{"limit", broker.HistoryFilter{Limit: 2}, seq(1, 2)},
		{"top only", broker.HistoryFilter{Limit: 0}, nil},
		{"reverse", broker.HistoryFilter{Limit: 3, Reverse: true}, []uint64{10, 9, 8}},
		{"reverse one", broker.HistoryFilter{Limit: 1, Reverse: true}, []uint64{10}},
		{"reverse since", broker.HistoryFilter{Since: since(4), Limit: 2, Reverse: true}, []uint64{3, 2}},
		{"reverse since all", broker.HistoryFilter{Since: since(4), Limit: -1, Reverse: true}, []uint64{3, 2, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pubs, _ := history(t, s, "a", tc.f)
			if got := offsets(pubs); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
	for _, bad := range []broker.StreamPosition{{Offset: 11, Epoch: epochs["a"]}, {Offset: 1, Epoch: "other"}} {
		_, top, err := s.History("a", broker.HistoryOptions{Filter: broker.HistoryFilter{Since: &bad, Limit: -1}})
		if !errors.Is(err, broker.ErrUnrecoverablePosition) || top.Offset != 10 {
			t.Fatalf("since %+v: top %+v, err %v", bad, top, err)
		}
	}
}

func TestHistoryEvictedBySize(t *testing.T) {
	srv := natstest.Start(t)
	s := newStore(t, srv.URL)
	opts := broker.PublishOptions{HistorySize: 5, HistoryTTL: time.Minute}
	for i := range 12 {
		appendOne(t, s, "c", strconv.Itoa(i), opts)
		appendOne(t, s, "other", strconv.Itoa(i), opts) // interleave sequences
	}
	pubs, top := history(t, s, "c", broker.HistoryFilter{Limit: -1})
	if got := offsets(pubs); !slices.Equal(got, seq(8, 12)) || top.Offset != 12 {
		t.Fatalf("got %v top %+v", got, top)
	}
	pubs, _ = history(t, s, "c", broker.HistoryFilter{Since: &broker.StreamPosition{Offset: 2, Epoch: top.Epoch}, Limit: 2})
	if got := offsets(pubs); !slices.Equal(got, seq(8, 9)) {
		t.Fatalf("since evicted: %v (the caller sees the gap)", got)
	}
}

func TestConcurrentAppenders(t *testing.T) {
	srv := natstest.Start(t)
	stores := []*Store{newStore(t, srv.URL), newStore(t, srv.URL)}
	const perWorker, workers = 30, 3
	var mu sync.Mutex
	var got []broker.StreamPosition
	var wg sync.WaitGroup
	for _, s := range stores {
		for w := range workers {
			wg.Go(func() {
				for i := range perWorker {
					items := []broker.StoreItem{item("hot", fmt.Sprint(w, i), hist), item("hot", "x", hist)}
					s.Append(items)
					mu.Lock()
					for _, it := range items {
						if it.Err != nil {
							t.Error(it.Err)
						}
						got = append(got, it.Position)
					}
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	n := uint64(len(stores) * workers * perWorker * 2)
	pubs, top := history(t, stores[0], "hot", broker.HistoryFilter{Limit: -1})
	if top.Offset != n {
		t.Fatalf("top %+v, want offset %d", top, n)
	}
	if n > 100 {
		n = 100
	}
	if o := offsets(pubs); len(o) != int(n) || o[len(o)-1] != top.Offset || o[0] != top.Offset-n+1 {
		t.Fatalf("history offsets %v", o)
	}
	seen := map[uint64]bool{}
	for _, p := range got {
		if p.Epoch != top.Epoch || seen[p.Offset] {
			t.Fatalf("position %+v given twice or in another epoch (top %+v)", p, top)
		}
		seen[p.Offset] = true
	}
}

func TestRestartKeepsHistoryAndEpoch(t *testing.T) {
	srv := natstest.Start(t)
	s := newStore(t, srv.URL)
	first := appendOne(t, s, "r", "1", hist)
	appendOne(t, s, "r", "2", hist)
	srv.Kill()
	srv.Restart(t)
	s2 := newStore(t, srv.URL)
	pubs, top := history(t, s2, "r", broker.HistoryFilter{Limit: -1})
	if top != (broker.StreamPosition{Offset: 2, Epoch: first.Position.Epoch}) || !slices.Equal(offsets(pubs), seq(1, 2)) {
		t.Fatalf("after restart: top %+v pubs %v", top, offsets(pubs))
	}
	third := appendOne(t, s2, "r", "3", hist)
	if third.Position != (broker.StreamPosition{Offset: 3, Epoch: first.Position.Epoch}) {
		t.Fatalf("third %+v", third.Position)
	}
}

// TestExpiryKeepsPosition: once HistoryTTL expired every publication the
// position stands, in a store that never saw the channel too, until the
// meta TTL passes; then the channel starts again at offset 1 in the epoch
// History gave.
func TestExpiryKeepsPosition(t *testing.T) {
	srv := natstest.Start(t)
	s := newStore(t, srv.URL)
	short := broker.PublishOptions{HistorySize: 10, HistoryTTL: 300 * time.Millisecond, HistoryMetaTTL: 3 * time.Second}
	appendOne(t, s, "e", "1", short)
	old := appendOne(t, s, "e", "2", short)
	waitTop(t, s, "e", func(pubs int, top broker.StreamPosition) bool {
		if top != old.Position {
			t.Fatalf("top %+v while publications expire, want %+v", top, old.Position)
		}
		return pubs == 0
	})
	if _, top := history(t, newStore(t, srv.URL), "e", broker.HistoryFilter{}); top != old.Position {
		t.Fatalf("another store sees %+v after expiry, want %+v", top, old.Position)
	}
	if next := appendOne(t, newStore(t, srv.URL), "e", "3", short); next.Position != (broker.StreamPosition{Offset: 3, Epoch: old.Position.Epoch}) {
		t.Fatalf("first after expiry %+v, want the offset after %+v", next.Position, old.Position)
	}
	var top broker.StreamPosition
	waitTop(t, s, "e", func(_ int, sp broker.StreamPosition) bool {
		top = sp
		return sp.Epoch != old.Position.Epoch
	})
	if top.Offset != 0 {
		t.Fatalf("top after the meta TTL %+v, want offset 0", top)
	}
	next := appendOne(t, s, "e", "4", short)
	if next.Position != (broker.StreamPosition{Offset: 1, Epoch: top.Epoch}) {
		t.Fatalf("first after the meta TTL %+v, want offset 1 in the epoch History gave (%q)", next.Position, top.Epoch)
	}
}

// waitTop reads the channel's history until done says so.
func waitTop(t *testing.T, s *Store, channel string, done func(pubs int, top broker.StreamPosition) bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		pubs, top := history(t, s, channel, broker.HistoryFilter{Limit: -1})
		if done(len(pubs), top) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up: top %+v, %d publications", top, len(pubs))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestHistoryBeforeFirstPublication(t *testing.T) {
	srv := natstest.Start(t)
	s, other := newStore(t, srv.URL), newStore(t, srv.URL)
	_, top := history(t, s, "new", broker.HistoryFilter{})
	if top.Offset != 0 || top.Epoch == "" {
		t.Fatalf("top %+v", top)
	}
	if _, again := history(t, other, "new", broker.HistoryFilter{}); again != top {
		t.Fatalf("other store sees %+v, want %+v", again, top)
	}
	it := appendOne(t, other, "new", "1", hist)
	if it.Position != (broker.StreamPosition{Offset: 1, Epoch: top.Epoch}) {
		t.Fatalf("first publication %+v, want epoch %q", it.Position, top.Epoch)
	}
	pubs, _ := history(t, s, "new", broker.HistoryFilter{Since: &top, Limit: -1})
	if !slices.Equal(offsets(pubs), []uint64{1}) {
		t.Fatalf("recovery from the pending epoch: %v", offsets(pubs))
	}
}

func TestRemoveHistoryKeepsTop(t *testing.T) {
	srv := natstest.Start(t)
	s := newStore(t, srv.URL)
	for i := range 3 {
		appendOne(t, s, "rm", strconv.Itoa(i), hist)
	}
	if err := s.RemoveHistory("rm"); err != nil {
		t.Fatal(err)
	}
	s2 := newStore(t, srv.URL)
	pubs, top := history(t, s2, "rm", broker.HistoryFilter{Limit: -1})
	if len(pubs) != 0 || top.Offset != 3 {
		t.Fatalf("after remove: %v top %+v", offsets(pubs), top)
	}
	next := appendOne(t, s2, "rm", "x", hist)
	if next.Position != (broker.StreamPosition{Offset: 4, Epoch: top.Epoch}) {
		t.Fatalf("next %+v", next.Position)
	}
	pubs, _ = history(t, s, "rm", broker.HistoryFilter{Limit: -1})
	if !slices.Equal(offsets(pubs), []uint64{4}) {
		t.Fatalf("history %v", offsets(pubs))
	}
	if err := s.RemoveHistory("never"); err != nil {
		t.Fatal(err)
	}
}

func TestIdempotency(t *testing.T) {
	srv := natstest.Start(t)
	s, s2 := newStore(t, srv.URL), newStore(t, srv.URL)
	opts := hist
	opts.IdempotencyKey = "k1"
	first := appendOne(t, s, "i", "1", opts)
	appendOne(t, s, "i", "2", hist)
	for _, st := range []*Store{s, s2} {
		again := appendOne(t, st, "i", "1", opts)
		if !again.Suppressed || again.Position != first.Position {
			t.Fatalf("repeat: %+v suppressed %v, want %+v", again.Position, again.Suppressed, first.Position)
		}
	}
	other := appendOne(t, s, "i2", "1", opts) // same key, other channel
	if other.Suppressed || other.Position.Offset != 1 {
		t.Fatalf("key shared across channels: %+v", other)
	}
	_, top := history(t, s, "i", broker.HistoryFilter{})
	if top.Offset != 2 {
		t.Fatalf("top %+v", top)
	}
}

// TestIdempotencyLostAck loses the ack of a keyed publication that was
// stored, as when NATS restarts or the node dies after the write: the
// retry, once the claim lapsed, must answer with the stored publication,
// not store it again. Without history too (a delta base is written).
func TestIdempotencyLostAck(t *testing.T) {
	srv := natstest.Start(t)
	s, err := New(Config{URL: srv.URL, Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	for _, o := range []broker.PublishOptions{hist, {UseDelta: true}} {
		ch := fmt.Sprintf("lost%v", o.UseDelta)
		before := appendOne(t, s, ch, "0", o)
		o.IdempotencyKey = "k"
		stopAcks(t, s)
		items := []broker.StoreItem{item(ch, "1", o)}
		s.Append(items)
		if !errors.Is(items[0].Err, broker.ErrNotAvailable) {
			t.Fatalf("append without its ack: %v, want not available", items[0].Err)
		}
		restartAcks(t, s)
		again := appendOne(t, s, ch, "1", o)
		if !again.Suppressed {
			t.Fatalf("retry after a lost ack: stored again at %+v", again.Position)
		}
		if o.UseDelta {
			continue
		}
		if want := (broker.StreamPosition{Offset: 2, Epoch: before.Position.Epoch}); again.Position != want {
			t.Fatalf("retry after a lost ack: suppressed at %+v, want %+v (where the lost attempt stored it)", again.Position, want)
		}
		pubs, top := history(t, s, ch, broker.HistoryFilter{Limit: -1})
		if top.Offset != 2 || len(pubs) != 2 {
			t.Fatalf("after the retry: top %+v, %d publications, want 2", top, len(pubs))
		}
	}
}

// stopAcks makes the store miss every ack until restartAcks.
func stopAcks(t *testing.T, s *Store) {
	t.Helper()
	if err := s.acks.sub.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	if err := s.nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

func restartAcks(t *testing.T, s *Store) {
	t.Helper()
	sub, err := s.nc.Subscribe(s.acks.prefix+"*", s.acks.handle)
	if err != nil {
		t.Fatal(err)
	}
	s.acks.sub = sub
	if err := s.nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

func TestVersion(t *testing.T) {
	srv := natstest.Start(t)
	s, s2 := newStore(t, srv.URL), newStore(t, srv.URL)
	v := func(version uint64, epoch string) broker.PublishOptions {
		o := hist
		o.Version, o.VersionEpoch = version, epoch
		return o
	}
	for i, tc := range []struct {
		st         *Store
		opts       broker.PublishOptions
		suppressed bool
	}{
		{s, v(2, "a"), false},
		{s2, v(1, "a"), true},  // older, seen by another store
		{s, v(2, ""), true},    // no epoch: compared whatever the epoch
		{s, v(1, "b"), false},  // new version epoch
		{s2, v(1, "b"), true},  // equal
		{s, hist, false},       // unversioned goes through and keeps the version
		{s2, v(1, "b"), true},  //
		{s2, v(5, "b"), false}, //
	} {
		it := appendOne(t, tc.st, "v", "x", tc.opts)
		if it.Suppressed != tc.suppressed {
			t.Fatalf("step %d: suppressed %v, want %v", i, it.Suppressed, tc.suppressed)
		}
		_, top := history(t, s, "v", broker.HistoryFilter{})
		if it.Position != top {
			t.Fatalf("step %d: position %+v, top %+v", i, it.Position, top)
		}
	}
}

func TestDeltaPrev(t *testing.T) {
	srv := natstest.Start(t)
	s := newStore(t, srv.URL)
	d := hist
	d.UseDelta = true
	items := []broker.StoreItem{item("d", "1", d), item("d", "2", d)}
	s.Append(items)
	if items[0].Prev != nil || items[1].Prev == nil || string(items[1].Prev.Data) != "1" {
		t.Fatalf("prev: %+v, %+v", items[0].Prev, items[1].Prev)
	}
	s2 := newStore(t, srv.URL) // knows nothing: reads the base from the stream
	it := appendOne(t, s2, "d", "3", d)
	if it.Prev == nil || string(it.Prev.Data) != "2" || it.Prev.Offset != 2 {
		t.Fatalf("prev from the stream: %+v", it.Prev)
	}
	nd := broker.PublishOptions{UseDelta: true}
	appendOne(t, s, "nd", "1", nd)
	if it := appendOne(t, s2, "nd", "2", nd); it.Prev == nil || string(it.Prev.Data) != "1" || it.Position != (broker.StreamPosition{}) {
		t.Fatalf("without history, prev from another store: %+v at %+v", it.Prev, it.Position)
	}
	appendOne(t, s, "nd", "3", broker.PublishOptions{})
	if it := appendOne(t, s2, "nd", "4", nd); it.Prev != nil {
		t.Fatalf("without history, prev after a publication without delta: %+v", it.Prev)
	}
}

// TestSettingsChange: a channel keeps its epoch and offsets when its
// HistorySize changes (one stream) and when its HistoryTTL does (it moves
// to the stream of the new TTL), also when a store that knows only the
// old stream appends with the old settings (it moves back).
func TestSettingsChange(t *testing.T) {
	srv := natstest.Start(t)
	s, s2 := newStore(t, srv.URL), newStore(t, srv.URL)
	a := appendOne(t, s, "m", "1", hist)
	appendOne(t, s, "m", "2", hist)
	history(t, s2, "m", broker.HistoryFilter{}) // s2 caches the old stream
	want := func(it broker.StoreItem, offset uint64) {
		t.Helper()
		if it.Position != (broker.StreamPosition{Offset: offset, Epoch: a.Position.Epoch}) {
			t.Fatalf("position %+v, want offset %d in epoch %q", it.Position, offset, a.Position.Epoch)
		}
	}
	want(appendOne(t, s, "m", "3", broker.PublishOptions{HistorySize: 2, HistoryTTL: hist.HistoryTTL}), 3)
	if pubs, _ := history(t, s2, "m", broker.HistoryFilter{Limit: -1}); !slices.Equal(offsets(pubs), []uint64{2, 3}) {
		t.Fatalf("after shrinking: %v", offsets(pubs))
	}
	longer := broker.PublishOptions{HistorySize: 200, HistoryTTL: 2 * time.Minute}
	want(appendOne(t, s, "m", "4", longer), 4)
	for _, st := range []*Store{s, s2, newStore(t, srv.URL)} {
		pubs, top := history(t, st, "m", broker.HistoryFilter{Limit: -1})
		if top.Offset != 4 || !slices.Equal(offsets(pubs), []uint64{4}) {
			t.Fatalf("history after the move: %v top %+v", offsets(pubs), top)
		}
	}
	want(appendOne(t, s2, "m", "5", hist), 5) // back, from a store that knew the old stream
	want(appendOne(t, s, "m", "6", longer), 6)
	if pubs, top := history(t, s2, "m", broker.HistoryFilter{Limit: -1}); top.Offset != 6 || !slices.Equal(offsets(pubs), []uint64{6}) {
		t.Fatalf("history after moving twice: %v top %+v", offsets(pubs), top)
	}
}

// TestMovesUnderLoad: stores appending with two HistoryTTLs to one
// channel move it back and forth; every position is handed out once, in
// one epoch, with no gap.
func TestMovesUnderLoad(t *testing.T) {
	srv := natstest.Start(t)
	settings := []broker.PublishOptions{hist, {HistorySize: 100, HistoryTTL: 2 * time.Minute}}
	var mu sync.Mutex
	var got []broker.StreamPosition
	var wg sync.WaitGroup
	for w := range 4 {
		s := newStore(t, srv.URL)
		wg.Go(func() {
			for i := range 20 {
				items := []broker.StoreItem{item("mv", fmt.Sprint(w, i), settings[(w+i/5)%2])}
				s.Append(items)
				mu.Lock()
				if items[0].Err != nil {
					t.Error(items[0].Err)
				}
				got = append(got, items[0].Position)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	checkUnique(t, got)
}

// checkUnique fails unless got are the offsets 1..len(got) of one epoch.
func checkUnique(t *testing.T, got []broker.StreamPosition) {
	t.Helper()
	seen := map[uint64]bool{}
	for _, p := range got {
		if p.Epoch != got[0].Epoch || seen[p.Offset] || p.Offset == 0 || p.Offset > uint64(len(got)) {
			t.Fatalf("position %+v given twice, out of range or in another epoch (first %+v)", p, got[0])
		}
		seen[p.Offset] = true
	}
}

// TestIdempotencyRace: stores publishing one key at once publish it once;
// the others answer with its position.
func TestIdempotencyRace(t *testing.T) {
	srv := natstest.Start(t)
	for n, opts := range []broker.PublishOptions{hist, {}} {
		opts.IdempotencyKey = "race"
		ch := "ir" + strconv.Itoa(n)
		var mu sync.Mutex
		var got []broker.StoreItem
		var wg sync.WaitGroup
		for range 4 {
			s := newStore(t, srv.URL)
			wg.Go(func() {
				items := []broker.StoreItem{item(ch, "x", opts)}
				s.Append(items)
				mu.Lock()
				got = append(got, items[0])
				mu.Unlock()
			})
		}
		wg.Wait()
		published := 0
		for _, it := range got {
			if it.Err != nil {
				t.Fatal(it.Err)
			}
			if !it.Suppressed {
				published++
			}
			if it.Position != got[0].Position {
				t.Fatalf("positions differ: %+v and %+v", it.Position, got[0].Position)
			}
		}
		if published != 1 {
			t.Fatalf("history %v: published %d times", opts.HistorySize > 0, published)
		}
	}
}

func TestOddChannelNames(t *testing.T) {
	srv := natstest.Start(t)
	s := newStore(t, srv.URL)
	names := []string{"", ".", "a.b", "*", ">", "a.*.>", "a b", "\t\r\n", "\x00\xff", "%", "%25", "%2E", "ü", "a..b", "$gyre", "x#1"}
	for i, ch := range names {
		for j := 0; j <= i%3; j++ {
			appendOne(t, s, ch, ch, hist)
		}
	}
	for i, ch := range names {
		pubs, top := history(t, s, ch, broker.HistoryFilter{Limit: -1})
		if want := uint64(i%3 + 1); top.Offset != want || len(pubs) != int(want) || string(pubs[0].Data) != ch {
			t.Fatalf("channel %q: top %+v, %d publications", ch, top, len(pubs))
		}
	}
}

func TestNATSDown(t *testing.T) {
	srv := natstest.Start(t)
	s := newStore(t, srv.URL)
	appendOne(t, s, "down", "1", hist)
	srv.Kill()
	items := []broker.StoreItem{item("down", "2", hist), item("other", "1", hist)}
	s.Append(items)
	for _, it := range items {
		if !errors.Is(it.Err, broker.ErrNotAvailable) {
			t.Fatalf("append while down: %v", it.Err)
		}
	}
	if _, _, err := s.History("down", broker.HistoryOptions{}); !errors.Is(err, broker.ErrNotAvailable) {
		t.Fatalf("history while down: %v", err)
	}
	if err := s.RemoveHistory("down"); !errors.Is(err, broker.ErrNotAvailable) {
		t.Fatalf("remove while down: %v", err)
	}
	if _, err := New(Config{URL: srv.URL}); !errors.Is(err, broker.ErrNotAvailable) {
		t.Fatalf("new while down: %v", err)
	}
}

func TestNoHistoryStoresNothing(t *testing.T) {
	srv := natstest.Start(t)
	s := newStore(t, srv.URL)
	it := appendOne(t, s, "nh", "1", broker.PublishOptions{})
	if it.Position != (broker.StreamPosition{}) || it.Suppressed {
		t.Fatalf("%+v", it)
	}
}

// TestHistorySinceEveryOffset reads after every offset of a channel whose
// messages are spread unevenly through its stream, so that the search for
// the start takes every branch.
func TestHistorySinceEveryOffset(t *testing.T) {
	srv := natstest.Start(t)
	s := newStore(t, srv.URL)
	opts := broker.PublishOptions{HistorySize: 40, HistoryTTL: time.Minute}
	for i := range 60 {
		// One Append each: one message per publication (see TestRunsSpreadUnevenly for runs).
		items := []broker.StoreItem{item("seek", strconv.Itoa(i), opts)}
		for j := range (i * 7) % 11 {
			items = append(items, item("noise"+strconv.Itoa(j), "n", opts))
		}
		appendAll(t, s, items)
	}
	_, top := history(t, s, "seek", broker.HistoryFilter{})
	for since := uint64(0); since <= top.Offset; since++ {
		sp := broker.StreamPosition{Offset: since, Epoch: top.Epoch}
		pubs, _ := history(t, s, "seek", broker.HistoryFilter{Since: &sp, Limit: 5})
		from := max(since+1, top.Offset-39)
		want := seq(from, min(from+4, top.Offset))
		if got := offsets(pubs); !slices.Equal(got, want) {
			t.Fatalf("since %d: %v, want %v", since, got, want)
		}
		pubs, _ = history(t, s, "seek", broker.HistoryFilter{Since: &sp, Limit: 3, Reverse: true})
		var rwant []uint64
		for o := int(since) - 1; o >= int(top.Offset-39) && len(rwant) < 3; o-- {
			rwant = append(rwant, uint64(o))
		}
		if got := offsets(pubs); !slices.Equal(got, rwant) {
			t.Fatalf("reverse since %d: %v, want %v", since, got, rwant)
		}
	}
}

// TestStore runs the store contract suite, every subtest on a store of
// its own prefix.
func TestStore(t *testing.T) {
	srv := natstest.Start(t)
	n := 0
	brokertest.RunStoreTests(t, func(t *testing.T) broker.Store {
		n++
		s, err := New(Config{URL: srv.URL, Prefix: fmt.Sprintf("t%d", n)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
