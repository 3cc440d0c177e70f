package maptest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
)

// entryData returns key's data in the state, and whether the key is
// there.
func (n *node) entryData(t testing.TB, ch, key string, mo broker.MapOptions) (string, bool) {
	t.Helper()
	entries := n.state(t, ch, broker.MapStateOptions{Map: mo, Key: key}).Entries
	if len(entries) == 0 {
		return "", false
	}
	return string(entries[0].Data), true
}

// wantData fails the test unless key holds data.
func (n *node) wantData(t testing.TB, ch, key, data string, mo broker.MapOptions) {
	t.Helper()
	if got, ok := n.entryData(t, ch, key, mo); !ok || got != data {
		t.Errorf("key %q holds %q (present %v), want %q", key, got, ok, data)
	}
}

// testKeyMode: if_new writes only a missing key, if_exists only a present
// one; a suppressed write answers the top and changes nothing; Remove of
// a missing key is key_not_found.
func testKeyMode(t *testing.T, e *env) {
	eachMode(t, func(t *testing.T, mo broker.MapOptions) {
		ch := e.channel(t)
		pub := func(key, data string, mode broker.KeyMode) broker.MapUpdateResult {
			return e.publish(t, ch, key, broker.MapPublishOptions{Map: mo, Data: []byte(data), KeyMode: mode})
		}
		top := e.written(t, ch, "a", broker.MapPublishOptions{Map: mo, Data: []byte("1"), KeyMode: broker.KeyModeIfNew})
		wantSuppressed(t, "if_new on a present key", pub("a", "2", broker.KeyModeIfNew), broker.SuppressKeyExists, top)
		wantSuppressed(t, "if_exists on a missing key", pub("b", "1", broker.KeyModeIfExists), broker.SuppressKeyNotFound, top)
		e.wantData(t, ch, "a", "1", mo)
		if _, ok := e.entryData(t, ch, "b", mo); ok {
			t.Error("if_exists wrote a missing key")
		}
		if res := pub("a", "3", broker.KeyModeIfExists); res.Suppressed || res.Position.Offset != top.Offset+1 {
			t.Errorf("if_exists on a present key: %+v", res)
		}
		e.wantData(t, ch, "a", "3", mo)
		top = e.write(t, ch, "a", "4", mo)
		wantSuppressed(t, "removing a missing key", e.remove(t, ch, "b", broker.MapRemoveOptions{Map: mo}), broker.SuppressKeyNotFound, top)
		e.removed(t, ch, "a", mo)
		if res := pub("a", "5", broker.KeyModeIfNew); res.Suppressed {
			t.Errorf("if_new on a removed key: %+v", res)
		}
	})
}

// testIdempotency: a repeated idempotency key, of a write or a removal,
// answers the first change's position and changes nothing; keys are per
// channel; a write suppressed for another reason is not remembered.
func testIdempotency(t *testing.T, e *env) {
	eachMode(t, func(t *testing.T, mo broker.MapOptions) {
		ch := e.channel(t)
		idem := func(data, ik string) broker.MapPublishOptions {
			return broker.MapPublishOptions{Map: mo, Data: []byte(data), IdempotencyKey: ik}
		}
		first := e.written(t, ch, "a", idem("1", "i1"))
		e.write(t, ch, "b", "1", mo)
		wantSuppressed(t, "repeated key", e.publish(t, ch, "a", idem("2", "i1")), broker.SuppressIdempotency, first)
		wantSuppressed(t, "repeated key on another map key", e.publish(t, ch, "c", idem("1", "i1")), broker.SuppressIdempotency, first)
		e.wantData(t, ch, "a", "1", mo)
		if _, ok := e.entryData(t, ch, "c", mo); ok {
			t.Error("a repeated idempotency key wrote")
		}

		removal := e.remove(t, ch, "b", broker.MapRemoveOptions{Map: mo, IdempotencyKey: "r1"})
		if removal.Suppressed {
			t.Fatalf("removal: %+v", removal)
		}
		wantSuppressed(t, "repeated removal key", e.remove(t, ch, "b", broker.MapRemoveOptions{Map: mo, IdempotencyKey: "r1"}), broker.SuppressIdempotency, removal.Position)

		top := e.write(t, ch, "d", "1", mo)
		wantSuppressed(t, "if_new on a present key", e.publish(t, ch, "d", broker.MapPublishOptions{Map: mo, Data: []byte("2"), KeyMode: broker.KeyModeIfNew, IdempotencyKey: "i2"}), broker.SuppressKeyExists, top)
		if res := e.publish(t, ch, "d", idem("3", "i2")); res.Suppressed {
			t.Errorf("the key of a write suppressed by its key mode was remembered: %+v", res)
		}

		other := e.channel(t)
		if res := e.publish(t, other, "a", idem("1", "i1")); res.Suppressed {
			t.Errorf("an idempotency key of another channel suppressed a write: %+v", res)
		}
		if got := deliveredChanges(e.marker(t, ch, mo)); !slices.Equal(got, []string{"a=1", "b=1", "-b", "d=1", "d=3"}) {
			t.Errorf("delivered %q", got)
		}
	})
}

// testIdempotencyExpiry: once IdempotentResultTTL passes the key writes
// again, while one remembered for longer still suppresses.
func testIdempotencyExpiry(t *testing.T, e *env) {
	mo := persistent
	ch := e.channel(t)
	long := broker.MapPublishOptions{Map: mo, Data: []byte("1"), IdempotencyKey: "long", IdempotentResultTTL: time.Hour}
	short := broker.MapPublishOptions{Map: mo, Data: []byte("1"), IdempotencyKey: "short", IdempotentResultTTL: 100 * time.Millisecond}
	firstLong := e.written(t, ch, "k", long)
	first := e.written(t, ch, "k", short)
	eventually(t, "the idempotency key to expire", func() bool {
		res := e.publish(t, ch, "k", short)
		if res.Suppressed {
			wantSuppressed(t, "before expiry", res, broker.SuppressIdempotency, first)
			return false
		}
		if res.Position.Offset != first.Offset+1 {
			t.Errorf("after expiry: at %+v, want the offset after %+v", res.Position, first)
		}
		return true
	})
	wantSuppressed(t, "the longer key", e.publish(t, ch, "k", long), broker.SuppressIdempotency, firstLong)
}

// testVersion: a versioned write is stale unless its version is above the
// key's stored one, when either epoch is empty or they are equal; each
// key has its own; a write without version keeps the stored one; a
// removal forgets it; an entry carries the version of its write.
func testVersion(t *testing.T, e *env) {
	eachMode(t, func(t *testing.T, mo broker.MapOptions) {
		ch := e.channel(t)
		var top broker.StreamPosition
		versioned := func(key string, v uint64, epoch string) broker.MapUpdateResult {
			t.Helper()
			return e.publish(t, ch, key, broker.MapPublishOptions{Map: mo, Data: fmt.Appendf(nil, "%d%s", v, epoch), Version: v, VersionEpoch: epoch})
		}
		write := func(key string, v uint64, epoch string) {
			t.Helper()
			res := versioned(key, v, epoch)
			if res.Suppressed {
				t.Fatalf("%s version %d epoch %q: suppressed (%q)", key, v, epoch, res.SuppressReason)
			}
			top = res.Position
		}
		stale := func(key string, v uint64, epoch string) {
			t.Helper()
			wantSuppressed(t, fmt.Sprintf("%s version %d epoch %q", key, v, epoch), versioned(key, v, epoch), broker.SuppressVersion, top)
		}
		write("k", 2, "a")
		write("k", 3, "a")
		stale("k", 3, "a")
		stale("k", 1, "a")
		stale("k", 2, "")
		write("k", 1, "b")
		stale("k", 1, "b")
		top = e.write(t, ch, "k", "plain", mo)
		stale("k", 1, "b")
		write("k", 2, "b")

		write("other", 1, "a") // each key has its own version

		write("e", 5, "")
		stale("e", 3, "x")
		write("e", 6, "x")

		e.removed(t, ch, "k", mo)
		write("k", 1, "b")
		top = e.write(t, ch, "other", "plain", mo)

		entries := sortByKey(e.state(t, ch, broker.MapStateOptions{Map: mo, Limit: -1}).Entries)
		got := make(map[string]string)
		for _, p := range entries {
			got[p.Key] = fmt.Sprintf("%s@%d", p.Data, p.Version)
		}
		want := map[string]string{"k": "1b@1", "e": "6x@6", "other": "plain@0"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("state %v, want %v", got, want)
		}
		ds := e.marker(t, ch, mo)
		if d := ds[len(ds)-2]; d.pub.Key != "k" || d.pub.Version != 1 {
			t.Errorf("delivered %s with version %d, want k with version 1", describe(d.pub), d.pub.Version)
		}
	})
}

// testClear: Clear drops state, stream and meta and delivers nothing;
// the channel then has a new epoch, its offsets start over, and positions
// of the old epoch are unrecoverable.
func testClear(t *testing.T, e *env) {
	eachMode(t, func(t *testing.T, mo broker.MapOptions) {
		ch := e.channel(t)
		old := applyChanges(t, e.node, ch, mo, []string{"a=1", "b=1"})
		e.clear(t, ch)
		if n := e.stats(t, ch); n != 0 {
			t.Errorf("%d keys after Clear", n)
		}
		res := e.state(t, ch, broker.MapStateOptions{Map: mo, Limit: -1})
		if len(res.Entries) != 0 {
			t.Errorf("state holds %q after Clear", keys(res.Entries))
		}
		top := res.Position
		if top.Offset != 0 || top.Epoch == "" || top.Epoch == old.Epoch {
			t.Errorf("after Clear at %+v, want offset 0 in an epoch other than %q", top, old.Epoch)
		}
		if pubs := e.stream(t, ch, mo, broker.HistoryFilter{Limit: -1}).Pubs; len(pubs) != 0 {
			t.Errorf("stream holds %q after Clear", changes(pubs))
		}
		_, err := e.b.ReadStream(t.Context(), ch, broker.MapStreamOptions{Map: mo, Filter: broker.HistoryFilter{Since: &old, Limit: -1}})
		wantErr(t, "stream since a position before Clear", err, broker.ErrUnrecoverablePosition)
		if sp := e.write(t, ch, "c", "1", mo); sp != (broker.StreamPosition{Offset: 1, Epoch: top.Epoch}) {
			t.Errorf("first change after Clear at %+v, want offset 1 in %q", sp, top.Epoch)
		}
		ds := e.marker(t, ch, mo)
		if got := deliveredChanges(ds); !slices.Equal(got, []string{"a=1", "b=1", "c=1"}) {
			t.Errorf("delivered %q, want [a=1 b=1 c=1]", got)
		}
		if err := e.b.Clear(t.Context(), uniqueChannel(t)); err != nil {
			t.Errorf("Clear of an unknown channel: %v", err)
		}
	})
}
