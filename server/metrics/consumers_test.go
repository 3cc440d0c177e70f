package metrics_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/gyrehq/gyre/server/consume"
	"github.com/gyrehq/gyre/server/metrics"
)

// snapshots stands for a consume.Set: the states a scrape reads.
type snapshots struct {
	mu   sync.Mutex
	list []consume.Snapshot
}

func (s *snapshots) get() []consume.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]consume.Snapshot(nil), s.list...)
}

func (s *snapshots) set(list ...consume.Snapshot) {
	s.mu.Lock()
	s.list = list
	s.mu.Unlock()
}

// Each consumer's state reaches its series at each scrape, under both
// names; Centrifugo's counters add up Gyre's as Centrifugo counts.
func TestConsumers(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Options{Centrifugo: true})
	newNode(t, m)
	var snaps snapshots
	m.Consumers(snaps.get)
	snaps.set(
		consume.Snapshot{Name: "outbox", Type: "postgresql", Running: true, Connected: true, Processed: 120, Skipped: 3, Retries: 4, SourceErrors: 2, Lag: 17},
		consume.Snapshot{Name: "events", Type: "kafka", Running: true, Connected: false, Processed: 5, Lag: -1},
		consume.Snapshot{Name: "stopped", Type: "nats_jetstream", Running: false, Connected: true, Lag: 0},
	)
	got := scrape(t, m)
	want := map[string]float64{
		`gyre_consumer_messages_total{consumer="outbox",outcome="processed",type="postgresql"}`: 120,
		`gyre_consumer_messages_total{consumer="outbox",outcome="skipped",type="postgresql"}`:   3,
		`gyre_consumer_retries_total{consumer="outbox",type="postgresql"}`:                      4,
		`gyre_consumer_source_errors_total{consumer="outbox",type="postgresql"}`:                2,
		`gyre_consumer_lag{consumer="outbox",type="postgresql"}`:                                17,
		`gyre_consumer_up{consumer="outbox",type="postgresql"}`:                                 1,
		`gyre_consumer_messages_total{consumer="events",outcome="processed",type="kafka"}`:      5,
		`gyre_consumer_messages_total{consumer="events",outcome="skipped",type="kafka"}`:        0,
		`gyre_consumer_up{consumer="events",type="kafka"}`:                                      0,
		`gyre_consumer_up{consumer="stopped",type="nats_jetstream"}`:                            0,
		`gyre_consumer_lag{consumer="stopped",type="nats_jetstream"}`:                           0,
		`centrifugo_consumers_messages_processed_total{consumer_name="outbox"}`:                 123,
		`centrifugo_consumers_errors_total{consumer_name="outbox"}`:                             6,
		`centrifugo_consumers_messages_processed_total{consumer_name="events"}`:                 5,
		`centrifugo_consumers_errors_total{consumer_name="events"}`:                             0,
		`centrifugo_consumers_errors_total{consumer_name="stopped"}`:                            0,
	}
	for series, v := range want {
		if g, ok := got[series]; !ok || g != v {
			t.Errorf("%s = %v (served %v), want %v", series, g, ok, v)
		}
	}
	// A lag the source cannot tell is not served.
	if _, ok := got[`gyre_consumer_lag{consumer="events",type="kafka"}`]; ok {
		t.Error("gyre_consumer_lag served for a consumer whose lag is unknown")
	}
	if n := countPrefix(got, "centrifugo_consumers_"); n != 6 {
		t.Errorf("%d centrifugo_consumers_* series, want 6 (two per consumer)", n)
	}

	// The next scrape reads the state anew.
	snaps.set(consume.Snapshot{Name: "outbox", Type: "postgresql", Running: true, Connected: true, Processed: 130, Skipped: 3, Retries: 4, SourceErrors: 3, Lag: -1})
	got = scrape(t, m)
	if v := got[`centrifugo_consumers_messages_processed_total{consumer_name="outbox"}`]; v != 133 {
		t.Errorf("processed after more messages: %v, want 133", v)
	}
	if v := got[`centrifugo_consumers_errors_total{consumer_name="outbox"}`]; v != 7 {
		t.Errorf("errors after a source error: %v, want 7", v)
	}
	if n := countPrefix(got, "gyre_consumer_lag"); n != 0 {
		t.Errorf("%d lag series once the lag is unknown, want 0", n)
	}
}

// Without consumers, and without the Centrifugo names, no consumer series
// are served.
func TestConsumersAbsent(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Options{Centrifugo: true})
	newNode(t, m)
	m.Consumers(func() []consume.Snapshot { return nil })
	got := scrape(t, m)
	if n := countPrefix(got, "gyre_consumer_") + countPrefix(got, "centrifugo_consumers_"); n != 0 {
		t.Errorf("%d consumer series without consumers", n)
	}

	m = metrics.New(metrics.Options{})
	newNode(t, m)
	m.Consumers(func() []consume.Snapshot {
		return []consume.Snapshot{{Name: "outbox", Type: "postgresql", Processed: 1}}
	})
	got = scrape(t, m)
	if countPrefix(got, "gyre_consumer_") == 0 || countPrefix(got, "centrifugo_") != 0 {
		t.Errorf("with Centrifugo names off: want gyre_consumer_* only, got %v", got)
	}
}

func countPrefix(series map[string]float64, prefix string) int {
	n := 0
	for s := range series {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	return n
}
