package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
)

var (
	mapPersistent  = broker.MapOptions{Mode: broker.MapModePersistent, StreamSize: 100, StreamTTL: time.Minute}
	mapRecoverable = broker.MapOptions{Mode: broker.MapModeRecoverable, KeyTTL: 300 * time.Millisecond, StreamSize: 100, StreamTTL: time.Minute, MetaTTL: time.Hour}
	mapEphemeral   = broker.MapOptions{Mode: broker.MapModeEphemeral, KeyTTL: time.Minute}
)

// eachMapSetup runs f on every Redis shape with a running MapBroker.
func eachMapSetup(t *testing.T, f func(t *testing.T, cfg Config)) {
	for _, s := range setups() {
		if s.name == "SingleRESP2" {
			continue
		}
		t.Run(s.name, func(t *testing.T) { f(t, s.cfg(t)) })
	}
}

// runMap returns a running MapBroker of an engine on cfg, and what it
// delivers.
func runMap(t testing.TB, cfg Config) (*MapBroker, *events) {
	t.Helper()
	m := newEngine(t, cfg).MapBroker()
	ev := newEvents()
	if err := m.Run(ev); err != nil {
		t.Fatalf("Run: %v", err)
	}
	return m, ev
}

func mapPublish(t testing.TB, m *MapBroker, channel, key, data string, opts broker.MapPublishOptions) broker.MapUpdateResult {
	t.Helper()
	opts.Data = []byte(data)
	res, err := m.Publish(context.Background(), channel, key, opts)
	if err != nil {
		t.Fatalf("Publish %s %s: %v", channel, key, err)
	}
	return res
}

func TestMapBrokerChanges(t *testing.T) {
	eachMapSetup(t, func(t *testing.T, cfg Config) {
		m, ev := runMap(t, cfg)
		ctx := context.Background()
		const ch = "prices"
		if err := m.Subscribe(ch); err != nil {
			t.Fatal(err)
		}
		info := &broker.ClientInfo{ClientID: "c1", UserID: "u1"}
		r1 := mapPublish(t, m, ch, "a", "1", broker.MapPublishOptions{Map: mapPersistent, Score: 7, Tags: map[string]string{"t": "v"}, ClientInfo: info})
		r2 := mapPublish(t, m, ch, "b", "2", broker.MapPublishOptions{Map: mapPersistent})
		r3 := mapPublish(t, m, ch, "a", "3", broker.MapPublishOptions{Map: mapPersistent, UseDelta: true})
		rm, err := m.Remove(ctx, ch, "b", broker.MapRemoveOptions{Map: mapPersistent, ClientInfo: info})
		if err != nil {
			t.Fatal(err)
		}
		if r1.Position.Epoch == "" || r1.Position.Offset != 1 || r2.Position.Offset != 2 || r3.Position.Offset != 3 || rm.Position.Offset != 4 {
			t.Fatalf("positions %v %v %v %v, want offsets 1-4 of one epoch", r1, r2, r3, rm)
		}
		for _, r := range []broker.MapUpdateResult{r2, r3, rm} {
			if r.Position.Epoch != r1.Position.Epoch || r.Suppressed {
				t.Fatalf("result %+v, want epoch %s, not suppressed", r, r1.Position.Epoch)
			}
		}

		want := []struct {
			key, data string
			removed   bool
		}{{"a", "1", false}, {"b", "2", false}, {"a", "3", false}, {"b", "", true}}
		for i, w := range want {
			d := ev.next(t)
			if d.channel != ch || d.pub.Key != w.key || string(d.pub.Data) != w.data || d.pub.Removed != w.removed ||
				d.sp != (broker.StreamPosition{Offset: uint64(i + 1), Epoch: r1.Position.Epoch}) || d.pub.Offset != uint64(i+1) {
				t.Fatalf("change %d: %s %+v at %v, want %+v at offset %d", i, d.channel, d.pub, d.sp, w, i+1)
			}
			switch i {
			case 0:
				if d.pub.Score != 7 || d.pub.Tags["t"] != "v" || d.pub.Info == nil || d.pub.Info.ClientID != "c1" {
					t.Fatalf("first change %+v lacks its score, tags or info", d.pub)
				}
			case 2:
				if d.prev == nil || string(d.prev.Data) != "1" || d.prev.Key != "a" || d.prev.Offset != 1 {
					t.Fatalf("delta change's prev %+v, want a=1 at offset 1", d.prev)
				}
			case 3:
				if d.pub.Info == nil || d.pub.Info.UserID != "u1" {
					t.Fatalf("removal %+v lacks who removed", d.pub)
				}
			}
		}

		st, err := m.ReadState(ctx, ch, broker.MapStateOptions{Map: mapPersistent, Limit: -1})
		if err != nil {
			t.Fatal(err)
		}
		if st.Position != rm.Position || st.Cursor != "" || len(st.Entries) != 1 {
			t.Fatalf("state %+v, want a alone at %v", st, rm.Position)
		}
		if e := st.Entries[0]; e.Key != "a" || string(e.Data) != "3" || e.Offset != 3 || e.Time == 0 {
			t.Fatalf("entry %+v, want a=3 at offset 3 with a time", e)
		}

		s, err := m.ReadStream(ctx, ch, broker.MapStreamOptions{Map: mapPersistent, Filter: broker.HistoryFilter{Limit: -1}})
		if err != nil {
			t.Fatal(err)
		}
		if s.Position != rm.Position || len(s.Pubs) != 4 {
			t.Fatalf("stream %+v, want 4 changes", s)
		}
		for i, p := range s.Pubs {
			if p.Offset != uint64(i+1) || p.Key != want[i].key || p.Removed != want[i].removed {
				t.Fatalf("stream change %d: %+v, want %+v", i, p, want[i])
			}
		}
		stats, err := m.Stats(ctx, ch)
		if err != nil || stats.NumKeys != 1 {
			t.Fatalf("Stats = %+v, %v; want 1 key", stats, err)
		}
	})
}

func TestMapBrokerSuppress(t *testing.T) {
	eachMapSetup(t, func(t *testing.T, cfg Config) {
		m, _ := runMap(t, cfg)
		ctx := context.Background()
		const ch = "suppress"
		first := mapPublish(t, m, ch, "k", "1", broker.MapPublishOptions{Map: mapPersistent, IdempotencyKey: "x", Version: 5, VersionEpoch: "v1"})
		check := func(name string, got broker.MapUpdateResult, reason broker.SuppressReason, pos broker.StreamPosition) {
			t.Helper()
			if !got.Suppressed || got.SuppressReason != reason || got.Position != pos {
				t.Fatalf("%s: %+v, want suppressed by %q at %v", name, got, reason, pos)
			}
		}
		check("idempotent repeat", mapPublish(t, m, ch, "k", "2", broker.MapPublishOptions{Map: mapPersistent, IdempotencyKey: "x"}), broker.SuppressIdempotency, first.Position)
		check("older version", mapPublish(t, m, ch, "k", "2", broker.MapPublishOptions{Map: mapPersistent, Version: 5, VersionEpoch: "v1"}), broker.SuppressVersion, first.Position)
		check("if_new", mapPublish(t, m, ch, "k", "2", broker.MapPublishOptions{Map: mapPersistent, KeyMode: broker.KeyModeIfNew}), broker.SuppressKeyExists, first.Position)
		check("if_exists", mapPublish(t, m, ch, "other", "2", broker.MapPublishOptions{Map: mapPersistent, KeyMode: broker.KeyModeIfExists}), broker.SuppressKeyNotFound, first.Position)
		rm, err := m.Remove(ctx, ch, "other", broker.MapRemoveOptions{Map: mapPersistent})
		if err != nil {
			t.Fatal(err)
		}
		check("remove of a missing key", rm, broker.SuppressKeyNotFound, first.Position)

		// A version of another epoch, or a newer one, writes.
		for i, o := range []broker.MapPublishOptions{{Version: 1, VersionEpoch: "v2"}, {Version: 6}} {
			o.Map = mapPersistent
			r := mapPublish(t, m, ch, "k", "v", o)
			if r.Suppressed || r.Position.Offset != first.Position.Offset+uint64(i)+1 {
				t.Fatalf("write %d: %+v, want the next offset", i, r)
			}
		}
		st, err := m.ReadState(ctx, ch, broker.MapStateOptions{Map: mapPersistent, Key: "k"})
		if err != nil || len(st.Entries) != 1 || st.Entries[0].Version != 6 {
			t.Fatalf("ReadState k = %+v, %v; want version 6", st, err)
		}
	})
}

func TestMapBrokerStatePaging(t *testing.T) {
	eachMapSetup(t, func(t *testing.T, cfg Config) {
		m, _ := runMap(t, cfg)
		ctx := context.Background()
		const ch, n = "paged", 750
		for i := range n {
			mapPublish(t, m, ch, "key"+strconv.Itoa(i), strconv.Itoa(i), broker.MapPublishOptions{Map: mapPersistent})
		}
		seen := make(map[string]bool)
		var cursor string
		var rev *broker.StreamPosition
		for pages := 0; ; pages++ {
			if pages > n {
				t.Fatal("paging does not end")
			}
			st, err := m.ReadState(ctx, ch, broker.MapStateOptions{Map: mapPersistent, Cursor: cursor, Limit: 100, Revision: rev})
			if err != nil {
				t.Fatalf("page %d: %v", pages, err)
			}
			if st.Position.Offset != n {
				t.Fatalf("page %d at %v, want top %d", pages, st.Position, n)
			}
			rev = &st.Position
			for _, e := range st.Entries {
				if string(e.Data) != e.Key[len("key"):] {
					t.Fatalf("entry %+v holds another key's value", e)
				}
				seen[e.Key] = true
			}
			if st.Cursor == "" {
				break
			}
			cursor = st.Cursor
			if _, err := m.ReadState(ctx, "other", broker.MapStateOptions{Map: mapPersistent, Cursor: cursor, Limit: 100}); !errors.Is(err, broker.ErrBadCursor) {
				t.Fatalf("cursor on another channel: %v, want ErrBadCursor", err)
			}
		}
		if len(seen) != n {
			t.Fatalf("paging saw %d keys, want %d", len(seen), n)
		}
		for _, bad := range []string{"!", "bm90IGEgY3Vyc29y", encodeMapCursor(ch, rev.Epoch, "x1")} {
			if _, err := m.ReadState(ctx, ch, broker.MapStateOptions{Map: mapPersistent, Cursor: bad, Limit: 10}); !errors.Is(err, broker.ErrBadCursor) {
				t.Fatalf("cursor %q: %v, want ErrBadCursor", bad, err)
			}
		}
		if _, err := m.ReadState(ctx, ch, broker.MapStateOptions{Map: mapPersistent, Limit: 10, Revision: &broker.StreamPosition{Epoch: "other"}}); !errors.Is(err, broker.ErrUnrecoverablePosition) {
			t.Fatalf("revision of another epoch: %v, want ErrUnrecoverablePosition", err)
		}
		st, err := m.ReadState(ctx, ch, broker.MapStateOptions{Map: mapPersistent, Limit: 0})
		if err != nil || len(st.Entries) != 0 || st.Cursor != "" || st.Position.Offset != n {
			t.Fatalf("limit 0: %+v, %v; want the position only", st, err)
		}

		// A cursor of an epoch that Clear ended.
		if err := m.Clear(ctx, ch); err != nil {
			t.Fatal(err)
		}
		if _, err := m.ReadState(ctx, ch, broker.MapStateOptions{Map: mapPersistent, Cursor: cursor, Limit: 100}); !errors.Is(err, broker.ErrUnrecoverablePosition) {
			t.Fatalf("cursor of a cleared epoch: %v, want ErrUnrecoverablePosition", err)
		}
	})
}

func TestMapBrokerStream(t *testing.T) {
	eachMapSetup(t, func(t *testing.T, cfg Config) {
		m, _ := runMap(t, cfg)
		ctx := context.Background()
		const ch = "stream"
		small := mapPersistent
		small.StreamSize = 5
		var last broker.MapUpdateResult
		for i := range 10 {
			last = mapPublish(t, m, ch, "k"+strconv.Itoa(i%3), strconv.Itoa(i), broker.MapPublishOptions{Map: small})
		}
		read := func(f broker.HistoryFilter) (broker.MapStreamResult, error) {
			return m.ReadStream(ctx, ch, broker.MapStreamOptions{Map: small, Filter: f})
		}
		res, err := read(broker.HistoryFilter{Limit: -1})
		if err != nil || len(res.Pubs) != 5 || res.Pubs[0].Offset != 6 || res.Position != last.Position {
			t.Fatalf("whole stream: %+v, %v; want offsets 6-10", res, err)
		}
		res, err = read(broker.HistoryFilter{Since: &broker.StreamPosition{Offset: 7, Epoch: last.Position.Epoch}, Limit: 2})
		if err != nil || len(res.Pubs) != 2 || res.Pubs[0].Offset != 8 || res.Pubs[1].Offset != 9 {
			t.Fatalf("since 7 limit 2: %+v, %v; want 8 and 9", res, err)
		}
		res, err = read(broker.HistoryFilter{Since: &broker.StreamPosition{Offset: 8, Epoch: last.Position.Epoch}, Limit: 2, Reverse: true})
		if err != nil || len(res.Pubs) != 2 || res.Pubs[0].Offset != 7 || res.Pubs[1].Offset != 6 {
			t.Fatalf("before 8 limit 2: %+v, %v; want 7 and 6", res, err)
		}
		for _, since := range []broker.StreamPosition{
			{Offset: 5, Epoch: last.Position.Epoch + "x"}, // another epoch
			{Offset: 11, Epoch: last.Position.Epoch},      // past the top
			{Offset: 3, Epoch: last.Position.Epoch},       // trimmed away
		} {
			if _, err := read(broker.HistoryFilter{Since: &since, Limit: -1}); !errors.Is(err, broker.ErrUnrecoverablePosition) {
				t.Fatalf("since %v: %v, want ErrUnrecoverablePosition", since, err)
			}
		}
		// Since the change just before the stream's first is fine.
		if res, err := read(broker.HistoryFilter{Since: &broker.StreamPosition{Offset: 5, Epoch: last.Position.Epoch}, Limit: -1}); err != nil || len(res.Pubs) != 5 {
			t.Fatalf("since 5: %+v, %v; want 5 changes", res, err)
		}

		// An ephemeral channel keeps no stream, but positions.
		eph := mapPublish(t, m, "eph", "k", "v", broker.MapPublishOptions{Map: mapEphemeral})
		res, err = m.ReadStream(ctx, "eph", broker.MapStreamOptions{Map: mapEphemeral, Filter: broker.HistoryFilter{Limit: -1}})
		if err != nil || len(res.Pubs) != 0 || res.Position != eph.Position || eph.Position.Offset != 1 {
			t.Fatalf("ephemeral stream: %+v, %v; want position %v only", res, err, eph.Position)
		}
	})
}

func TestMapBrokerClear(t *testing.T) {
	eachMapSetup(t, func(t *testing.T, cfg Config) {
		m, _ := runMap(t, cfg)
		ctx := context.Background()
		const ch = "cleared"
		before := mapPublish(t, m, ch, "k", "v", broker.MapPublishOptions{Map: mapRecoverable})
		if err := m.Clear(ctx, ch); err != nil {
			t.Fatal(err)
		}
		st, err := m.ReadState(ctx, ch, broker.MapStateOptions{Map: mapRecoverable, Limit: -1})
		if err != nil || len(st.Entries) != 0 || st.Position.Offset != 0 || st.Position.Epoch == before.Position.Epoch {
			t.Fatalf("state after Clear: %+v, %v; want empty in a new epoch", st, err)
		}
		after := mapPublish(t, m, ch, "k2", "v", broker.MapPublishOptions{Map: mapRecoverable})
		if after.Position != (broker.StreamPosition{Offset: 1, Epoch: st.Position.Epoch}) {
			t.Fatalf("first write after Clear at %v, want offset 1 of %s", after.Position, st.Position.Epoch)
		}
	})
}

// TestMapBrokerExpiry runs two nodes' MapBrokers on one setup: each key
// that expires is removed once, as a change both nodes deliver.
func TestMapBrokerExpiry(t *testing.T) {
	eachMapSetup(t, func(t *testing.T, cfg Config) {
		m1, ev1 := runMap(t, cfg)
		m2, ev2 := runMap(t, cfg)
		ctx := context.Background()
		chans := []string{"exp1", "exp2", "exp3"}
		for _, ch := range chans {
			for _, m := range []*MapBroker{m1, m2} {
				if err := m.Subscribe(ch); err != nil {
					t.Fatal(err)
				}
			}
		}
		// "keep" is kept alive by suppressed writes until the others expired.
		const keys = 5
		for _, ch := range chans {
			for i := range keys {
				mapPublish(t, m1, ch, "k"+strconv.Itoa(i), "v", broker.MapPublishOptions{Map: mapRecoverable})
			}
		}
		type change struct {
			ch, key string
			removed bool
			offset  uint64
		}
		collect := func(ev *events, n int) []change {
			var out []change
			for range n {
				d := ev.next(t)
				out = append(out, change{d.channel, d.pub.Key, d.pub.Removed, d.sp.Offset})
			}
			return out
		}
		total := len(chans) * keys * 2 // writes and removals
		got1, got2 := collect(ev1, total), collect(ev2, total)
		if !slices.Equal(got1, got2) {
			t.Fatalf("nodes delivered different changes:\n%v\n%v", got1, got2)
		}
		removed := make(map[string]int)
		for _, c := range got1 {
			if c.removed {
				removed[c.ch+"/"+c.key]++
			}
		}
		if len(removed) != len(chans)*keys {
			t.Fatalf("removals %v, want one per key", removed)
		}
		for k, n := range removed {
			if n != 1 {
				t.Fatalf("key %s removed %d times", k, n)
			}
		}
		for _, ch := range chans {
			st, err := m2.ReadState(ctx, ch, broker.MapStateOptions{Map: mapRecoverable, Limit: -1})
			if err != nil || len(st.Entries) != 0 || st.Position.Offset != 2*keys {
				t.Fatalf("%s after expiry: %+v, %v; want empty at offset %d", ch, st, err, 2*keys)
			}
			s, err := m2.ReadStream(ctx, ch, broker.MapStreamOptions{Map: mapRecoverable, Filter: broker.HistoryFilter{Limit: -1}})
			if err != nil || len(s.Pubs) != 2*keys || !s.Pubs[2*keys-1].Removed {
				t.Fatalf("%s stream after expiry: %+v, %v; want writes and removals", ch, s, err)
			}
		}
		select {
		case d := <-ev1.pubs:
			t.Fatalf("unexpected change %+v", d)
		default:
		}
	})
}

func TestMapBrokerRefreshOnSuppress(t *testing.T) {
	eachMapSetup(t, func(t *testing.T, cfg Config) {
		m, ev := runMap(t, cfg)
		const ch = "presence"
		if err := m.Subscribe(ch); err != nil {
			t.Fatal(err)
		}
		opts := broker.MapPublishOptions{Map: mapRecoverable, KeyMode: broker.KeyModeIfNew, RefreshTTLOnSuppress: true}
		mapPublish(t, m, ch, "keep", "v", opts)
		mapPublish(t, m, ch, "drop", "v", broker.MapPublishOptions{Map: mapRecoverable})
		for range 2 {
			ev.next(t)
		}
		// Keep "keep" alive until "drop" expired: its removal must be
		// the only change, however long that takes.
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-t.Context().Done():
					return
				default:
				}
				r, err := m.Publish(context.Background(), ch, "keep", opts)
				if err != nil || r.SuppressReason != broker.SuppressKeyExists {
					t.Errorf("refresh: %+v, %v", r, err)
					return
				}
				time.Sleep(50 * time.Millisecond)
				if st, _ := m.ReadState(context.Background(), ch, broker.MapStateOptions{Map: mapRecoverable, Key: "drop"}); len(st.Entries) == 0 {
					return
				}
			}
		}()
		d := ev.next(t)
		<-done
		if d.pub.Key != "drop" || !d.pub.Removed {
			t.Fatalf("change %+v, want drop removed", d.pub)
		}
		st, err := m.ReadState(context.Background(), ch, broker.MapStateOptions{Map: mapRecoverable, Key: "keep"})
		if err != nil || len(st.Entries) != 1 {
			t.Fatalf("keep after refreshes: %+v, %v", st, err)
		}
	})
}

// TestMapBrokerSubscriptionLost drops the pub/sub connections: the
// subscribed map channels are reported lost once subscribed again, and
// their changes flow after.
func TestMapBrokerSubscriptionLost(t *testing.T) {
	eachMapSetup(t, func(t *testing.T, cfg Config) {
		m, ev := runMap(t, cfg)
		chans := []string{"lost1", "lost2", "lost3"}
		for _, ch := range chans {
			if err := m.Subscribe(ch); err != nil {
				t.Fatal(err)
			}
		}
		killPubSub(t, cfg)
		reported := make(map[string]bool)
		for len(reported) < len(chans) {
			select {
			case lost := <-ev.lost:
				for _, ch := range lost {
					reported[ch] = true
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("reported lost: %v, want %v", reported, chans)
			}
		}
		for _, ch := range chans {
			if !reported[ch] {
				t.Fatalf("reported %v, want %v", reported, chans)
			}
		}
		eventually(t, "map pub/sub back", func() bool { return m.Healthy() == nil })
		r := mapPublish(t, m, chans[0], "k", "v", broker.MapPublishOptions{Map: mapPersistent})
		if d := ev.next(t); d.channel != chans[0] || d.sp != r.Position {
			t.Fatalf("after the loss got %s at %v, want %s at %v", d.channel, d.sp, chans[0], r.Position)
		}
	})
}

func TestMapBrokerClose(t *testing.T) {
	srv := eachSingle(t)
	m, err := NewMapBroker(Config{Addresses: []string{srv}, Prefix: "gyretest"})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Run(newEvents()); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Publish(context.Background(), "c", "k", broker.MapPublishOptions{Map: mapPersistent}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Publish after Close: %v, want ErrClosed", err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func eachSingle(t *testing.T) string {
	t.Helper()
	return fmt.Sprint(setups()[0].cfg(t).Addresses[0])
}
