package maptest

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
)

// fullOpts returns publish options that set every field an entry
// carries.
func fullOpts(mo broker.MapOptions, data string) broker.MapPublishOptions {
	return broker.MapPublishOptions{
		Map:  mo,
		Data: []byte(data),
		Tags: map[string]string{"kind": "full", "n": "1"},
		ClientInfo: &broker.ClientInfo{
			ClientID: "client-1", UserID: "user-1",
			ConnInfo: []byte(`{"conn":1}`), ChanInfo: []byte(`{"chan":1}`),
		},
		Score:   -7,
		Version: 3,
	}
}

// checkEntry fails the test unless p is what fullOpts wrote into key at
// sp, between the Unix milliseconds from and to (give or take a minute,
// for a backend whose clock is its own).
func checkEntry(t testing.TB, what string, p broker.Publication, key string, opts broker.MapPublishOptions, sp broker.StreamPosition, from, to int64) {
	t.Helper()
	want := broker.Publication{
		Offset: sp.Offset, Key: key, Data: opts.Data, Tags: opts.Tags, Info: opts.ClientInfo,
		Score: opts.Score, Version: opts.Version, Time: p.Time,
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("%s: %+v (info %+v), want %+v (info %+v)", what, p, p.Info, want, want.Info)
	}
	if minute := time.Minute.Milliseconds(); p.Time < from-minute || p.Time > to+minute {
		t.Errorf("%s: time %d, not near %d..%d", what, p.Time, from, to)
	}
}

// testStateFields: a state entry carries what was written, and the
// offset of the change that wrote it.
func testStateFields(t *testing.T, e *env) {
	eachMode(t, func(t *testing.T, mo broker.MapOptions) {
		ch := e.channel(t)
		opts := fullOpts(mo, `{"v":1}`)
		from := time.Now().UnixMilli()
		sp := e.written(t, ch, "k", opts)
		to := time.Now().UnixMilli()
		entries := e.state(t, ch, broker.MapStateOptions{Map: mo, Limit: -1}).Entries
		if len(entries) != 1 {
			t.Fatalf("state holds %d entries, want 1", len(entries))
		}
		checkEntry(t, "state entry", *entries[0], "k", opts, sp, from, to)
		d := e.rec.waitPubs(t, ch, 1)[0]
		checkEntry(t, "delivered change", d.pub, "k", opts, sp, from, to)
		if d.sp != sp {
			t.Errorf("delivered at %+v, want %+v", d.sp, sp)
		}
	})
}

// stateKeys are the keys the paging tests write: enough for many pages.
func stateKeys(n int, prefix string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%05d", prefix, i)
	}
	return out
}

// writeShuffled writes each key (its name as data) in an order that is
// not the keys' own.
func writeShuffled(t testing.TB, n *node, ch string, mo broker.MapOptions, ks []string) broker.StreamPosition {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	var top broker.StreamPosition
	for _, i := range r.Perm(len(ks)) {
		top = n.write(t, ch, ks[i], ks[i], mo)
	}
	return top
}

// testStatePaging: paging through 2,500 keys returns each once with its
// data, whatever the page size; every page reports the same top; a page
// of -1 returns all. With OrderedPages: pages come in key order and hold
// at most the limit.
func testStatePaging(t *testing.T, e *env) {
	eachMode(t, func(t *testing.T, mo broker.MapOptions) {
		ch := e.channel(t)
		want := stateKeys(2500, "key")
		top := writeShuffled(t, e.node, ch, mo, want)
		for _, limit := range []int{100, 7, 1000, -1} {
			t.Run(fmt.Sprint("Limit", limit), func(t *testing.T) {
				var got []*broker.Publication
				cursor := ""
				for pages := 1; ; pages++ {
					res := e.state(t, ch, broker.MapStateOptions{Map: mo, Cursor: cursor, Limit: limit})
					if res.Position != top {
						t.Fatalf("page %d at %+v, want %+v", pages, res.Position, top)
					}
					if e.opts.orderedPages && limit > 0 && len(res.Entries) > limit {
						t.Fatalf("page %d holds %d entries, more than the limit %d", pages, len(res.Entries), limit)
					}
					got = append(got, res.Entries...)
					if cursor = res.Cursor; cursor == "" {
						break
					}
					if limit < 0 || pages > 2*len(want) {
						t.Fatalf("page %d of limit %d hands out cursor %q", pages, limit, cursor)
					}
				}
				if e.opts.orderedPages && !slices.IsSortedFunc(got, func(a, b *broker.Publication) int { return strings.Compare(a.Key, b.Key) }) {
					t.Error("entries are not in key order")
				}
				checkAllOnce(t, sortByKey(got), want)
			})
		}
	})
}

// checkAllOnce fails the test unless sorted (entries sorted by key) holds
// each key of want exactly once, with the key as its data.
func checkAllOnce(t testing.TB, sorted []*broker.Publication, want []string) {
	t.Helper()
	if got := keys(sorted); !slices.Equal(got, want) {
		t.Fatalf("iteration returned %d keys, want each of %d once (first difference at %d)", len(got), len(want), firstDifference(got, want))
	}
	for _, p := range sorted {
		if string(p.Data) != p.Key {
			t.Fatalf("entry %q holds %q", p.Key, p.Data)
		}
	}
}

func firstDifference(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// testStatePagingUnderWrites: while keys come and go between pages, an
// iteration returns every key present throughout it (exactly once with
// OrderedPages), and no key that was gone throughout.
func testStatePagingUnderWrites(t *testing.T, e *env) {
	mo := persistent
	ch := e.channel(t)
	stay, gone := stateKeys(300, "stay"), stateKeys(300, "gone")
	writeShuffled(t, e.node, ch, mo, append(slices.Clone(stay), gone...))
	for _, k := range gone[:100] {
		e.removed(t, ch, k, mo)
	}
	var got []*broker.Publication
	cursor, page := "", 0
	for {
		res := e.state(t, ch, broker.MapStateOptions{Map: mo, Cursor: cursor, Limit: 20})
		got = append(got, res.Entries...)
		if cursor = res.Cursor; cursor == "" {
			break
		}
		if page > 10000 {
			t.Fatalf("still paging after %d pages", page)
		}
		// Between pages: one key goes, one comes, one stays with new
		// data of the same kind.
		e.removed(t, ch, gone[100+page%200], mo)
		e.write(t, ch, fmt.Sprintf("new-%05d", page), fmt.Sprintf("new-%05d", page), mo)
		e.write(t, ch, stay[(page*7)%len(stay)], stay[(page*7)%len(stay)], mo)
		page++
	}
	if page < 5 {
		t.Fatalf("the iteration took %d pages; the test needs writes between several", page)
	}
	seen := make(map[string]int)
	for _, p := range got {
		seen[p.Key]++
	}
	for _, k := range stay {
		if seen[k] == 0 || (e.opts.orderedPages && seen[k] > 1) {
			t.Errorf("key %q present throughout returned %d times", k, seen[k])
		}
	}
	for _, k := range gone[:100] {
		if seen[k] > 0 {
			t.Errorf("key %q, removed before the iteration, returned", k)
		}
	}
	for k := range maps.Keys(seen) {
		if !strings.HasPrefix(k, "stay-") && !strings.HasPrefix(k, "gone-") && !strings.HasPrefix(k, "new-") {
			t.Errorf("unknown key %q returned", k)
		}
	}
}

// testStateLimit: limit 0 returns the position only, -1 everything, and
// a limit no smaller than the state everything in one page (with
// OrderedPages).
func testStateLimit(t *testing.T, e *env) {
	eachMode(t, func(t *testing.T, mo broker.MapOptions) {
		ch := e.channel(t)
		want := stateKeys(5, "k")
		top := writeShuffled(t, e.node, ch, mo, want)
		res := e.state(t, ch, broker.MapStateOptions{Map: mo, Limit: 0})
		if len(res.Entries) != 0 || res.Cursor != "" || res.Position != top {
			t.Errorf("limit 0: %d entries, cursor %q, at %+v; want none, no cursor, at %+v", len(res.Entries), res.Cursor, res.Position, top)
		}
		res = e.state(t, ch, broker.MapStateOptions{Map: mo, Limit: -1})
		if res.Cursor != "" || res.Position != top {
			t.Errorf("limit -1: cursor %q at %+v, want none at %+v", res.Cursor, res.Position, top)
		}
		checkAllOnce(t, sortByKey(res.Entries), want)
		if !e.opts.orderedPages {
			return
		}
		for _, limit := range []int{5, 6} {
			res = e.state(t, ch, broker.MapStateOptions{Map: mo, Limit: limit})
			if res.Cursor != "" {
				t.Errorf("limit %d over 5 keys: cursor %q, want the last page", limit, res.Cursor)
			}
			checkAllOnce(t, res.Entries, want)
		}
	})
}

// testStateKey: with Key set ReadState returns that key's entry alone,
// whatever the limit and cursor, and nothing for a missing key.
func testStateKey(t *testing.T, e *env) {
	eachMode(t, func(t *testing.T, mo broker.MapOptions) {
		ch := e.channel(t)
		top := writeShuffled(t, e.node, ch, mo, stateKeys(20, "k"))
		cursor := e.state(t, ch, broker.MapStateOptions{Map: mo, Limit: 3}).Cursor
		for _, opts := range []broker.MapStateOptions{
			{Map: mo, Key: "k-00007"},
			{Map: mo, Key: "k-00007", Limit: -1},
			{Map: mo, Key: "k-00007", Limit: 1, Cursor: cursor},
		} {
			res := e.state(t, ch, opts)
			if k := keys(res.Entries); !slices.Equal(k, []string{"k-00007"}) || res.Position != top || res.Cursor != "" {
				t.Errorf("%+v: keys %q at %+v, cursor %q; want [k-00007] at %+v, no cursor", opts, k, res.Position, res.Cursor, top)
			}
		}
		if res := e.state(t, ch, broker.MapStateOptions{Map: mo, Key: "missing"}); len(res.Entries) != 0 || res.Position != top {
			t.Errorf("missing key: %d entries at %+v, want none at %+v", len(res.Entries), res.Position, top)
		}
	})
}

// testBadCursor: a cursor the broker did not hand out, or handed out for
// another channel, is ErrBadCursor.
func testBadCursor(t *testing.T, e *env) {
	mo := persistent
	ch1, ch2 := e.channel(t), e.channel(t)
	writeShuffled(t, e.node, ch1, mo, stateKeys(30, "k"))
	writeShuffled(t, e.node, ch2, mo, stateKeys(30, "k"))
	res := e.state(t, ch1, broker.MapStateOptions{Map: mo, Limit: 10})
	if res.Cursor == "" {
		t.Fatal("a first page of 10 of 30 keys hands out no cursor")
	}
	_, err := e.b.ReadState(t.Context(), ch2, broker.MapStateOptions{Map: mo, Cursor: res.Cursor, Limit: 10})
	wantErr(t, "cursor of another channel", err, broker.ErrBadCursor)
	for _, c := range []string{"!", "not a cursor", "AAAA", "%%%%", strings.Repeat("z", 500), "\x00\xff"} {
		_, err := e.b.ReadState(t.Context(), ch1, broker.MapStateOptions{Map: mo, Cursor: c, Limit: 10})
		wantErr(t, fmt.Sprintf("cursor %q", c), err, broker.ErrBadCursor)
	}
	// The cursor still works where it came from.
	e.state(t, ch1, broker.MapStateOptions{Map: mo, Cursor: res.Cursor, Limit: 10})
}

// testRevision: ReadState with a Revision of the channel's epoch pages on
// (whatever changed meanwhile); of another epoch, or of an epoch Clear
// ended, it is ErrUnrecoverablePosition, with Key set too.
func testRevision(t *testing.T, e *env) {
	eachMode(t, func(t *testing.T, mo broker.MapOptions) {
		ch := e.channel(t)
		writeShuffled(t, e.node, ch, mo, stateKeys(5, "k"))
		first := e.state(t, ch, broker.MapStateOptions{Map: mo, Limit: 2})
		rev := first.Position
		e.write(t, ch, "k-00009", "k-00009", mo)
		e.state(t, ch, broker.MapStateOptions{Map: mo, Limit: 2, Cursor: first.Cursor, Revision: &rev})
		other := broker.StreamPosition{Offset: rev.Offset, Epoch: rev.Epoch + "-other"}
		for _, opts := range []broker.MapStateOptions{
			{Map: mo, Limit: 2, Revision: &other},
			{Map: mo, Limit: 2, Cursor: first.Cursor, Revision: &other},
			{Map: mo, Key: "k-00001", Revision: &other},
		} {
			_, err := e.b.ReadState(t.Context(), ch, opts)
			wantErr(t, fmt.Sprintf("revision of another epoch, %+v", opts), err, broker.ErrUnrecoverablePosition)
		}
		e.clear(t, ch)
		_, err := e.b.ReadState(t.Context(), ch, broker.MapStateOptions{Map: mo, Limit: 2, Revision: &rev})
		wantErr(t, "revision of an epoch before Clear", err, broker.ErrUnrecoverablePosition)
	})
}

// testStats counts the keys: writes of new keys add, rewrites and
// suppressed writes do not, removals take away.
func testStats(t *testing.T, e *env) {
	eachMode(t, func(t *testing.T, mo broker.MapOptions) {
		ch := e.channel(t)
		if n := e.stats(t, ch); n != 0 {
			t.Errorf("new channel has %d keys", n)
		}
		for _, k := range []string{"a", "b", "c", "a"} {
			e.write(t, ch, k, "1", mo)
		}
		e.publish(t, ch, "d", broker.MapPublishOptions{Map: mo, KeyMode: broker.KeyModeIfExists})
		if n := e.stats(t, ch); n != 3 {
			t.Errorf("%d keys, want 3", n)
		}
		e.removed(t, ch, "b", mo)
		if n := e.stats(t, ch); n != 2 {
			t.Errorf("%d keys after a removal, want 2", n)
		}
	})
}

// testResultsAreCopies: what ReadState and ReadStream return belongs to
// the caller, and the broker keeps its own copy of what Publish was given.
func testResultsAreCopies(t *testing.T, e *env) {
	mo := persistent
	ch := e.channel(t)
	opts := fullOpts(mo, "data")
	e.written(t, ch, "k", opts)
	opts.Data[0] = 'X'
	opts.Tags["kind"] = "changed"
	opts.ClientInfo.ConnInfo[0] = 'X'
	spoil := func(pubs []*broker.Publication) {
		for _, p := range pubs {
			p.Data[0] = 'Y'
			p.Tags["kind"] = "spoiled"
			p.Info.ChanInfo[0] = 'Y'
			p.Key = "spoiled"
		}
	}
	spoil(e.state(t, ch, broker.MapStateOptions{Map: mo, Limit: -1}).Entries)
	spoil(e.state(t, ch, broker.MapStateOptions{Map: mo, Key: "k"}).Entries)
	spoil(e.stream(t, ch, mo, broker.HistoryFilter{Limit: -1}).Pubs)
	want := fullOpts(mo, "data")
	check := func(what string, pubs []*broker.Publication) {
		t.Helper()
		if len(pubs) != 1 {
			t.Fatalf("%s: %d publications, want 1", what, len(pubs))
		}
		p := pubs[0]
		if p.Key != "k" || string(p.Data) != "data" || !maps.Equal(p.Tags, want.Tags) || !reflect.DeepEqual(p.Info, want.ClientInfo) {
			t.Errorf("%s: key %q data %q tags %v info %+v; the caller's changes reached the broker", what, p.Key, p.Data, p.Tags, p.Info)
		}
	}
	check("state", e.state(t, ch, broker.MapStateOptions{Map: mo, Limit: -1}).Entries)
	check("stream", e.stream(t, ch, mo, broker.HistoryFilter{Limit: -1}).Pubs)
}
