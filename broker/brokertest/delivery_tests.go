package brokertest

import (
	"bytes"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
)

// testIdempotency: a repeated key returns the first position, reports the
// publish suppressed and delivers nothing; other keys publish.
func testIdempotency(t *testing.T, e *brokerEnv) {
	eachHistory(t, func(t *testing.T, opts broker.PublishOptions) {
		e.skipUnlessStreams(t, broker.PublishOptions{IdempotencyKey: "k"})
		ch := e.channel()
		publishIdempotent(t, e.streamEnv, ch, opts)
		if got := deliveredData(e.rec.waitPubs(t, ch, 3)); !reflect.DeepEqual(got, []string{"a", "c", "d"}) {
			t.Errorf("delivered %q, want [a c d]", got)
		}
	})
}

// eachHistory runs f as two subtests, publishing with history and
// without.
func eachHistory(t *testing.T, f func(t *testing.T, opts broker.PublishOptions)) {
	t.Run("WithHistory", func(t *testing.T) { f(t, withHistory) })
	t.Run("WithoutHistory", func(t *testing.T) { f(t, broker.PublishOptions{}) })
}

// publishIdempotent publishes into ch "a" with key k1, "b" with k1 again,
// "c" with k2 and "d" without a key, and checks that "b" alone was
// suppressed, at the position of "a".
func publishIdempotent(t *testing.T, e *streamEnv, ch string, opts broker.PublishOptions) {
	t.Helper()
	keyed := func(key string) broker.PublishOptions {
		o := opts
		o.IdempotencyKey = key
		return o
	}
	first := e.publish(ch, "a", keyed("k1"))
	sp, suppressed, err := e.publishOne(ch, []byte("b"), keyed("k1"))
	if err != nil || !suppressed || sp != first {
		t.Fatalf("repeated key: position %+v suppressed %v error %v; want %+v, true, nil", sp, suppressed, err, first)
	}
	other := e.publish(ch, "c", keyed("k2"))
	e.publish(ch, "d", opts)
	if opts.HistorySize > 0 && other.Offset != first.Offset+1 {
		t.Errorf("second key got offset %d, want %d", other.Offset, first.Offset+1)
	}
}

// testIdempotencyExpiry: once IdempotentResultTTL passes, the key
// publishes again, even while a key stored earlier with a longer TTL is
// still remembered.
func testIdempotencyExpiry(t *testing.T, e *streamEnv) {
	ch := e.channel()
	keyed := func(key string, ttl time.Duration) broker.PublishOptions {
		o := withHistory
		o.IdempotencyKey, o.IdempotentResultTTL = key, ttl
		return o
	}
	long := keyed("long", time.Hour)
	short := keyed("short", 100*time.Millisecond)
	e.publish(ch, "m", long)
	first := e.publish(ch, "m", short)
	eventually(t, "the idempotency key to expire", func() bool {
		sp, suppressed, err := e.publishOne(ch, []byte("m"), short)
		if err != nil {
			t.Fatalf("Publish: %v", err)
		}
		if suppressed {
			if sp != first {
				t.Fatalf("suppressed publish returned %+v, want %+v", sp, first)
			}
			return false
		}
		if sp.Offset != first.Offset+1 {
			t.Fatalf("publish after expiry got offset %d, want %d", sp.Offset, first.Offset+1)
		}
		return true
	})
	if _, suppressed, err := e.publishOne(ch, []byte("m"), long); err != nil || !suppressed {
		t.Errorf("key with the long TTL: suppressed %v, error %v; want true, nil", suppressed, err)
	}
}

// testOrderOnePublisher: publishes issued back to back by one goroutine
// are delivered in that order, with and without history.
func testOrderOnePublisher(t *testing.T, e *brokerEnv) {
	for _, tt := range []struct {
		name string
		opts broker.PublishOptions
	}{
		{"WithHistory", withHistory},
		{"WithoutHistory", broker.PublishOptions{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e.skipUnlessStreams(t, tt.opts)
			ch := e.channel()
			const n = 500
			want := make([]string, n)
			for i := range n {
				want[i] = strconv.Itoa(i)
				e.publish(ch, want[i], tt.opts)
			}
			if got := deliveredData(e.rec.waitPubs(t, ch, n)); !reflect.DeepEqual(got, want) {
				t.Errorf("delivery order differs from publish order:\n got %v\nwant %v", got, want)
			}
		})
	}
}

// testOrderConcurrentPublishers: many goroutines publishing to a few
// channels get distinct offsets, and each channel's publications reach the
// handler in offset order and never concurrently.
func testOrderConcurrentPublishers(t *testing.T, e *brokerEnv) {
	const channels, publishers, each = 3, 4, 100
	chs := make([]string, channels)
	for i := range chs {
		chs[i] = e.channel()
	}
	publishConcurrently(t, e.streamEnv, chs, publishers, each, withHistory)
	checkMergedStreams(t, e, chs, publishers*each)
}

// checkMergedStreams waits for n deliveries on each channel, published by
// several publishers at once, and checks that they have offsets 1 to n,
// that each publisher's own keep their order, and that the channel was
// never handled by two HandleRuns calls at once.
func checkMergedStreams(t *testing.T, e *brokerEnv, chs []string, n int) {
	t.Helper()
	for _, ch := range chs {
		ds := e.rec.waitPubs(t, ch, n)
		order := publisherOrder{}
		for i, d := range ds {
			if d.pub.Offset != uint64(i+1) || d.sp.Offset != uint64(i+1) {
				t.Fatalf("%s: delivery %d has offset %d, position %+v", ch, i, d.pub.Offset, d.sp)
			}
			order.Check(t, ch, d.pub.Data)
		}
		if k := e.rec.overlapCount(ch); k != 0 {
			t.Errorf("%s: %d HandleRuns calls with runs of the channel began while another was in the handler", ch, k)
		}
	}
}

// testDelta: with UseDelta the handler gets the delta flag and the
// previous publication of the channel, with or without history.
func testDelta(t *testing.T, e *brokerEnv) {
	for _, tt := range []struct {
		name string
		opts broker.PublishOptions
	}{
		{"WithHistory", withHistory},
		{"WithoutHistory", broker.PublishOptions{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// The delta base is kept with the stream's meta, also for
			// channels without history.
			e.skipUnlessStreams(t, withHistory)
			ch := e.channel()
			delta := tt.opts
			delta.UseDelta = true
			e.publish(ch, "one", delta)
			e.publish(ch, "two", delta)
			e.publish(ch, "three", tt.opts)
			e.publish(ch, "four", delta)
			ds := e.rec.waitPubs(t, ch, 4)
			if !ds[0].delta || !ds[1].delta || ds[2].delta {
				t.Errorf("delta flags = %v %v %v, want true true false", ds[0].delta, ds[1].delta, ds[2].delta)
			}
			if ds[0].prev != nil {
				t.Errorf("first publication of the channel has prev %q", ds[0].prev.Data)
			}
			if p := ds[1].prev; p == nil || string(p.Data) != "one" || p.Offset != ds[0].pub.Offset {
				t.Errorf("second publication's prev = %+v, want the first", p)
			}
			if ds[2].prev != nil {
				t.Errorf("publication without UseDelta has prev %q", ds[2].prev.Data)
			}
			// Subscribers got "three" in full: a delta against "two" would
			// corrupt their state. Knowing no base (nil) is allowed.
			if p := ds[3].prev; p != nil && string(p.Data) != "three" {
				t.Errorf("publication after one without delta has prev %q, want three or none", p.Data)
			}
		})
	}
}

// testJoinLeave: join and leave events reach the handler with their
// channel and client info.
func testJoinLeave(t *testing.T, e *brokerEnv) {
	ch := e.channel()
	info := &broker.ClientInfo{ClientID: "c1", UserID: "u1", ConnInfo: []byte("conn"), ChanInfo: []byte("chan")}
	if err := e.b.PublishJoin(ch, info); err != nil {
		t.Fatalf("PublishJoin: %v", err)
	}
	if err := e.b.PublishLeave(ch, info); err != nil {
		t.Fatalf("PublishLeave: %v", err)
	}
	r := e.rec
	r.waitUntil(t, "join and leave", func() bool { return len(r.joins[ch]) == 1 && len(r.leaves[ch]) == 1 })
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, got := range []broker.ClientInfo{r.joins[ch][0], r.leaves[ch][0]} {
		if got.ClientID != info.ClientID || got.UserID != info.UserID ||
			!bytes.Equal(got.ConnInfo, info.ConnInfo) || !bytes.Equal(got.ChanInfo, info.ChanInfo) {
			t.Errorf("delivered info %+v, want %+v", got, *info)
		}
	}
}

// testControl: a control message for every node reaches this one.
func testControl(t *testing.T, e *brokerEnv) {
	data := []byte("control-" + uniqueChannel(t))
	if err := e.b.PublishControl(data, ""); err != nil {
		t.Fatalf("PublishControl: %v", err)
	}
	r := e.rec
	r.waitUntil(t, "the control message", func() bool {
		for _, c := range r.controls {
			if bytes.Equal(c, data) {
				return true
			}
		}
		return false
	})
}
