package maptest

import (
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
)

// testExpiry: an expired key is removed as one change: the next offset,
// Removed, the entry's tags, no data or info; delivered, in the stream
// when there is one, gone from the state.
func testExpiry(t *testing.T, e *env) {
	eachExpiringMode(t, 200*time.Millisecond, func(t *testing.T, mo broker.MapOptions) {
		ch := e.channel(t)
		tags := map[string]string{"t": "1"}
		written := e.written(t, ch, "a", broker.MapPublishOptions{Map: mo, Data: []byte("1"), Tags: tags, ClientInfo: &broker.ClientInfo{ClientID: "c"}})
		ds := e.rec.waitKey(t, ch, "a", true)
		r := ds[len(ds)-1]
		want := broker.StreamPosition{Offset: written.Offset + 1, Epoch: written.Epoch}
		if r.sp != want || r.pub.Offset != want.Offset || len(r.pub.Data) != 0 || r.pub.Info != nil || !maps.Equal(r.pub.Tags, tags) {
			t.Errorf("expiry delivered as %+v at %+v; want at %+v with tags %v, no data, no info", r.pub, r.sp, want, tags)
		}
		if n := e.stats(t, ch); n != 0 {
			t.Errorf("%d keys after expiry", n)
		}
		if entries := e.state(t, ch, broker.MapStateOptions{Map: mo, Limit: -1}).Entries; len(entries) != 0 {
			t.Errorf("state holds %q after expiry", keys(entries))
		}
		if mo.Mode.HasStream() {
			pubs := e.stream(t, ch, mo, broker.HistoryFilter{Limit: -1}).Pubs
			if got := changes(pubs); !slices.Equal(got, []string{"a=1", "-a"}) {
				t.Errorf("stream holds %q, want [a=1 -a]", got)
			}
			checkOffsets(t, "stream", pubs, 1, 2)
		}
		mo.KeyTTL = time.Hour // the marker must outlive the check
		if got := deliveredChanges(e.marker(t, ch, mo)); !slices.Equal(got, []string{"a=1", "-a"}) {
			t.Errorf("delivered %q, want [a=1 -a]", got)
		}
	})
}

// keepAliveTTL is the KeyTTL of the tests of keeping a key alive. They
// keep a key alive by touching it again and again until a key written
// with it expires: the test would fail only if the toucher stalled for
// this long.
const keepAliveTTL = time.Second

// keptAlive writes "kept" and "control" with keepAliveTTL, then calls
// touch in a loop until control's removal is delivered; it fails the test
// unless kept is still in the state then and was never removed. It
// returns the changes delivered before a marker written afterwards.
func keptAlive(t *testing.T, e *env, mo broker.MapOptions, touch func(ch string) error) []string {
	t.Helper()
	mo.KeyTTL = keepAliveTTL
	ch := e.channel(t)
	e.write(t, ch, "kept", "1", mo)
	e.write(t, ch, "control", "1", mo)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var touchErr error
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			if err := touch(ch); err != nil {
				touchErr = err
				return
			}
		}
	})
	e.rec.waitKey(t, ch, "control", true)
	_, present := e.entryData(t, ch, "kept", mo)
	close(stop)
	wg.Wait()
	if touchErr != nil {
		t.Fatal(touchErr)
	}
	if !present {
		t.Error("the key kept alive expired with the one written beside it")
	}
	mo.KeyTTL = time.Hour
	got := deliveredChanges(e.marker(t, ch, mo))
	if slices.Contains(got, "-kept") {
		t.Errorf("the key kept alive was removed: %q", got)
	}
	return got
}

// testExpiryRewriteExtends: rewriting a key starts its TTL again.
func testExpiryRewriteExtends(t *testing.T, e *env) {
	eachExpiringMode(t, keepAliveTTL, func(t *testing.T, mo broker.MapOptions) {
		keptAlive(t, e, mo, func(ch string) error {
			_, err := e.b.Publish(t.Context(), ch, "kept", broker.MapPublishOptions{Map: mo, Data: []byte("1")})
			return err
		})
	})
}

// testRefreshTTLOnSuppress: an if_new write of a present key with
// RefreshTTLOnSuppress keeps the key alive without a change.
func testRefreshTTLOnSuppress(t *testing.T, e *env) {
	eachExpiringMode(t, keepAliveTTL, func(t *testing.T, mo broker.MapOptions) {
		got := keptAlive(t, e, mo, func(ch string) error {
			res, err := e.b.Publish(t.Context(), ch, "kept", broker.MapPublishOptions{Map: mo, Data: []byte("2"), KeyMode: broker.KeyModeIfNew, RefreshTTLOnSuppress: true})
			if err == nil && (!res.Suppressed || res.SuppressReason != broker.SuppressKeyExists) {
				err = errors.New("an if_new write of a present key was not suppressed as key_exists")
			}
			return err
		})
		if want := []string{"kept=1", "control=1", "-control"}; !slices.Equal(got, want) {
			t.Errorf("delivered %q, want %q", got, want)
		}
	})
}
