package memory

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/occupancytest"
)

func newOccupancyNodes(t testing.TB) func() broker.OccupancyTracker {
	return func() broker.OccupancyTracker {
		tr, err := NewOccupancyTracker(OccupancyConfig{})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
}

func TestOccupancy(t *testing.T) {
	routes := func(t testing.TB) func(string) broker.OccupancyTracker {
		make := newOccupancyNodes(t)
		return func(string) broker.OccupancyTracker { return make() }
	}
	occupancytest.Run(t, newOccupancyNodes, occupancytest.Routes(routes), occupancytest.Dropping(func(t testing.TB, backlog int, log *slog.Logger) broker.OccupancyTracker {
		tr, err := NewOccupancyTracker(OccupancyConfig{Backlog: backlog, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}))
}

func BenchmarkOccupancy(b *testing.B) {
	occupancytest.Bench(b, newOccupancyNodes)
}

// blockedHandler fails every call until open is set, counting them.
type blockedHandler struct {
	open  atomic.Bool
	calls atomic.Int64
	got   atomic.Int64
}

func (h *blockedHandler) HandleOccupancy(_ context.Context, events []broker.OccupancyEvent) error {
	h.calls.Add(1)
	if !h.open.Load() {
		return errors.New("down")
	}
	h.got.Add(int64(len(events)))
	return nil
}

// TestOccupancyBacklog: past the backlog the oldest events are dropped,
// the newest kept and handed over once the handler works again.
func TestOccupancyBacklog(t *testing.T) {
	const backlog = 10
	tr, err := NewOccupancyTracker(OccupancyConfig{Backlog: backlog})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	h := &blockedHandler{}
	if err := tr.RunOccupancy(h, broker.OccupancyOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 * backlog {
		if err := tr.Hold(broker.OccupancyChannel, "k"+strconv.Itoa(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for h.calls.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the handler was never called")
		}
		time.Sleep(time.Millisecond)
	}
	tr.mu.Lock()
	kept, dropped, first := len(tr.events), tr.dropped, tr.events[0].Key
	tr.mu.Unlock()
	if kept != backlog || dropped != 2*backlog || first != "k"+strconv.Itoa(2*backlog) {
		t.Fatalf("kept %d from %s, dropped %d; want %d from k%d, %d", kept, first, dropped, backlog, 2*backlog, 2*backlog)
	}
	if n := tr.OccupancyDropped(); n != 2*backlog {
		t.Errorf("OccupancyDropped %d, want %d", n, 2*backlog)
	}
	h.open.Store(true)
	for h.got.Load() < backlog {
		if time.Now().After(deadline) {
			t.Fatalf("handed over %d events, want %d", h.got.Load(), backlog)
		}
		time.Sleep(time.Millisecond)
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.events) != 0 || tr.dropped != 0 {
		t.Fatalf("after catching up: %d events, %d dropped", len(tr.events), tr.dropped)
	}
}
