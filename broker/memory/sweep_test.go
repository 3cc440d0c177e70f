package memory

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
)

// newQuietBroker returns a broker whose background sweep never fires
// during a test, so that the test drives sweeps itself.
func newQuietBroker(t *testing.T, cfg Config) *Broker {
	t.Helper()
	cfg.SweepInterval = time.Hour
	b, err := NewBroker(cfg)
	if err != nil {
		t.Fatalf("NewBroker: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func (b *Broker) channelCount() int {
	n := 0
	for i := range b.streams.all {
		n += b.streams.all[i].len()
	}
	return n
}

func mustPublish(t *testing.T, b *Broker, ch string, opts broker.PublishOptions) broker.StreamPosition {
	t.Helper()
	sp, _, err := b.Publish(ch, []byte("m"), opts)
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	return sp
}

// TestSweepKeepsLiveState: the sweep frees a channel only once nothing in
// it is worth keeping.
func TestSweepKeepsLiveState(t *testing.T) {
	hist := broker.PublishOptions{HistorySize: 10, HistoryTTL: time.Minute, HistoryMetaTTL: time.Hour}
	for _, tt := range []struct {
		name string
		opts broker.PublishOptions
		// lives is how long the channel must survive; zero means it is
		// idle at once.
		lives time.Duration
	}{
		{"NoHistory", broker.PublishOptions{}, 0},
		{"History", hist, time.Hour},
		{"DeltaWithoutHistory", broker.PublishOptions{UseDelta: true, HistoryMetaTTL: time.Hour}, time.Hour},
		{"IdempotencyKey", broker.PublishOptions{IdempotencyKey: "k", IdempotentResultTTL: time.Hour}, time.Hour},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := newQuietBroker(t, Config{Shards: 1})
			start := time.Now()
			mustPublish(t, b, "ch", tt.opts)
			if tt.lives > 0 {
				b.sweep(start.Add(tt.lives - time.Minute).UnixNano())
				if n := b.channelCount(); n != 1 {
					t.Fatalf("live channel swept: %d channels left", n)
				}
			}
			b.sweep(start.Add(tt.lives + time.Minute).UnixNano())
			if n := b.channelCount(); n != 0 {
				t.Fatalf("idle channel kept: %d channels left", n)
			}
		})
	}
}

// TestSweepBounded: one tick examines at most the configured number of
// channels, and the next tick resumes with the rest.
func TestSweepBounded(t *testing.T) {
	b := newQuietBroker(t, Config{Shards: 1, SweepBatch: 10})
	hist := broker.PublishOptions{HistorySize: 1, HistoryTTL: time.Minute, HistoryMetaTTL: time.Minute}
	for i := range 95 {
		mustPublish(t, b, fmt.Sprint("ch", i), hist)
	}
	later := time.Now().Add(time.Hour).UnixNano()
	for want := 85; want >= 0; want -= 10 {
		b.sweep(later)
		if n := b.channelCount(); n != max(want, 0) {
			t.Fatalf("after a tick: %d channels, want %d", n, max(want, 0))
		}
	}
	b.sweep(later)
	if n := b.channelCount(); n != 0 {
		t.Fatalf("%d channels left", n)
	}
}

// TestSweepSkipsBusyChannel: a channel whose lock is held (a handler is
// running) is not waited for and not removed.
func TestSweepSkipsBusyChannel(t *testing.T) {
	b := newQuietBroker(t, Config{Shards: 1})
	mustPublish(t, b, "ch", broker.PublishOptions{})
	st := b.streams.lock("ch", false)
	b.sweep(time.Now().Add(time.Hour).UnixNano())
	st.mu.Unlock()
	if n := b.channelCount(); n != 1 {
		t.Fatalf("busy channel swept: %d channels", n)
	}
	b.sweep(time.Now().Add(time.Hour).UnixNano())
	if n := b.channelCount(); n != 0 {
		t.Fatalf("idle channel kept: %d channels", n)
	}
}

// TestStreamLostWhenSwept: a swept stream comes back with a new epoch.
func TestStreamLostWhenSwept(t *testing.T) {
	b := newQuietBroker(t, Config{})
	hist := broker.PublishOptions{HistorySize: 10, HistoryTTL: time.Minute, HistoryMetaTTL: time.Minute}
	old := mustPublish(t, b, "ch", hist)
	b.sweep(time.Now().Add(time.Hour).UnixNano())
	sp := mustPublish(t, b, "ch", hist)
	if sp.Offset != 1 || sp.Epoch == old.Epoch {
		t.Errorf("publish after the stream was swept = %+v, want offset 1 in an epoch other than %q", sp, old.Epoch)
	}
}

// TestSweepRacesPublish: publishers keep going while sweeps remove their
// idle channels underneath them; every publication is still delivered
// and streams with history keep their offsets.
func TestSweepRacesPublish(t *testing.T) {
	b := newQuietBroker(t, Config{Shards: 2})
	h := &countHandler{}
	if err := b.Run(h); err != nil {
		t.Fatal(err)
	}
	hist := broker.PublishOptions{HistorySize: 10, HistoryTTL: time.Minute}
	stop := make(chan struct{})
	var sweeper sync.WaitGroup
	sweeper.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				b.sweep(time.Now().UnixNano())
			}
		}
	})
	const publishers, each = 4, 300
	var wg sync.WaitGroup
	for p := range publishers {
		wg.Go(func() {
			for i := range each {
				mustPublish(t, b, fmt.Sprint("transient", i%7), broker.PublishOptions{})
				if sp := mustPublish(t, b, fmt.Sprint("stream", p), hist); sp.Offset != uint64(i+1) {
					t.Errorf("stream%d: offset %d, want %d", p, sp.Offset, i+1)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	sweeper.Wait()
	if got, want := h.pubs(), publishers*each*2; got != want {
		t.Errorf("delivered %d publications, want %d", got, want)
	}
}

// TestHistorySkipsExpiredBehindLiveFront: publications stored with a
// shorter TTL than an older one are not returned once expired, though the
// ring can drop them only from the front.
func TestHistorySkipsExpiredBehindLiveFront(t *testing.T) {
	b := newQuietBroker(t, Config{})
	long := broker.PublishOptions{HistorySize: 10, HistoryTTL: time.Hour}
	short := broker.PublishOptions{HistorySize: 10, HistoryTTL: time.Millisecond}
	mustPublish(t, b, "ch", long)
	mustPublish(t, b, "ch", short)
	mustPublish(t, b, "ch", long)
	time.Sleep(5 * time.Millisecond) // at least the short TTL passes
	for _, reverse := range []bool{false, true} {
		pubs, _, err := b.History("ch", broker.HistoryOptions{Filter: broker.HistoryFilter{Limit: -1, Reverse: reverse}})
		if err != nil {
			t.Fatal(err)
		}
		want := []uint64{1, 3}
		if reverse {
			want = []uint64{3, 1}
		}
		if got := []uint64{}; len(pubs) != 2 || pubs[0].Offset != want[0] || pubs[1].Offset != want[1] {
			for _, p := range pubs {
				got = append(got, p.Offset)
			}
			t.Errorf("reverse=%v: offsets %v, want %v", reverse, got, want)
		}
	}
	// A limit counts returned publications, not examined ones.
	pubs, _, _ := b.History("ch", broker.HistoryOptions{Filter: broker.HistoryFilter{Limit: 2}})
	if len(pubs) != 2 {
		t.Errorf("limit 2 returned %d publications", len(pubs))
	}
}

// TestIdempotencyQueueCompacts: expired keys leave both the map and the
// insertion queue, so a channel publishing with fresh keys forever holds
// only the live ones.
func TestIdempotencyQueueCompacts(t *testing.T) {
	var s stream
	now := int64(1000)
	for i := range 1000 {
		s.idemStore(fmt.Sprint("k", i), broker.StreamPosition{Offset: uint64(i)}, now+10)
		now++
		s.expireIdem(now)
	}
	if len(s.idem) != 9 || len(s.idemQueue)-s.idemHead != 9 || cap(s.idemQueue) > 64 {
		t.Errorf("live keys %d, queued %d (cap %d), want 9 each", len(s.idem), len(s.idemQueue)-s.idemHead, cap(s.idemQueue))
	}
	// A key stored again after expiring keeps its new result when the old
	// queue item leaves.
	s = stream{}
	s.idemStore("k", broker.StreamPosition{Offset: 1}, 10)
	s.idemStore("other", broker.StreamPosition{Offset: 2}, 100)
	s.idemStore("k", broker.StreamPosition{Offset: 3}, 50) // after the first expired at 10
	s.expireIdem(20)
	if sp, ok := s.idemLookup("k", 20); !ok || sp.Offset != 3 {
		t.Errorf("re-stored key = %+v, %v; want offset 3", sp, ok)
	}
	s.expireIdem(200)
	if s.idem != nil || s.idemQueue != nil {
		t.Errorf("all keys expired but %d remain in the map, %d in the queue", len(s.idem), len(s.idemQueue))
	}
}
