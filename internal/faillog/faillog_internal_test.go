package faillog

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// countHandler counts records and keeps the last one.
type countHandler struct {
	level slog.Level
	mu    sync.Mutex
	n     int
	last  slog.Record
}

func (h *countHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }
func (h *countHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.n++
	h.last = r.Clone()
	h.mu.Unlock()
	return nil
}
func (h *countHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countHandler) WithGroup(string) slog.Handler      { return h }

func (h *countHandler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// TestFailureLog: per kind and window, the first Burst failures
// are logged one by one and the rest summed up in one line; a new window
// logs again; kinds do not share their lines.
func TestFailureLog(t *testing.T) {
	h := &countHandler{}
	l := New(slog.New(h))
	l.window = time.Hour // the test ends the windows itself
	const n = 1000
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { l.Add("publish", slog.LevelError, "api method failed", "method", "publish", "i", i) })
	}
	wg.Wait()
	if got := h.count(); got != Burst {
		t.Fatalf("%d lines for %d failures, want %d", got, n, Burst)
	}
	l.Add("history", slog.LevelError, "api method failed", "method", "history")
	if got := h.count(); got != Burst+1 {
		t.Fatalf("a failure of another kind was not logged: %d lines", got)
	}

	l.FlushAll()
	if got := h.count(); got != Burst+2 {
		t.Fatalf("%d lines after the flush, want one summary more", got)
	}
	var notLogged int64
	h.last.Attrs(func(a slog.Attr) bool {
		if a.Key == "not_logged" {
			notLogged = a.Value.Int64()
		}
		return true
	})
	if h.last.Level != slog.LevelError || h.last.Message != "api method failed" || notLogged != n-Burst {
		t.Fatalf("summary %v, want the failures' level and message with not_logged=%d", h.last, n-Burst)
	}
	l.FlushAll()
	if got := h.count(); got != Burst+2 {
		t.Fatalf("a flush with nothing counted wrote %d lines", got-Burst-2)
	}

	// The next window logs its first failures again.
	l.mu.Lock()
	l.kinds["publish"].start = time.Now().Add(-2 * l.window)
	l.mu.Unlock()
	l.Add("publish", slog.LevelError, "api method failed")
	if got := h.count(); got != Burst+3 {
		t.Fatalf("the first failure of a new window was not logged")
	}
}

// TestFailureLogDisabledLevel: failures below the logger's level cost no
// entry and no line.
func TestFailureLogDisabledLevel(t *testing.T) {
	h := &countHandler{level: slog.LevelWarn}
	l := New(slog.New(h))
	for range 10 {
		l.Add("bad request", slog.LevelInfo, "api: bad request")
	}
	l.FlushAll()
	if h.count() != 0 || len(l.kinds) != 0 {
		t.Fatalf("%d lines and %d kinds for failures below the level", h.count(), len(l.kinds))
	}
}

// TestFailureLogSummaryAtWindowEnd: the summary comes by itself when the
// window ends.
func TestFailureLogSummaryAtWindowEnd(t *testing.T) {
	h := &countHandler{}
	l := New(slog.New(h))
	l.window = time.Hour
	for range Burst + 3 {
		l.Add("publish", slog.LevelError, "api method failed")
	}
	// End the window now rather than in an hour.
	l.mu.Lock()
	l.kinds["publish"].timer.Reset(0)
	l.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for h.count() != Burst+1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d lines, want the summary after the window", h.count())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
