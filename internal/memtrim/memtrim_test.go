package memtrim

import (
	"context"
	"log/slog"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

func TestWorthTrimming(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name      string
		prev, cur sample
		want      bool
	}{
		{"quiet with a burst's memory left", sample{allocs: 500 * mib}, sample{allocs: 501 * mib, objects: 120 * mib, live: 100 * mib, free: 80 * mib}, true},
		{"quiet, dead objects alone", sample{allocs: 0}, sample{allocs: mib / 2, objects: 160 * mib, live: 100 * mib}, true},
		{"still allocating", sample{allocs: 0}, sample{allocs: 50 * mib, objects: 120 * mib, live: 100 * mib, free: 80 * mib}, false},
		{"little beyond live", sample{allocs: 0}, sample{allocs: mib / 2, objects: 110 * mib, live: 100 * mib, free: 10 * mib}, false},
		{"small heap", sample{allocs: 0}, sample{allocs: 1024, objects: 3 * mib, live: mib, free: mib}, false},
		{"objects below live after a collection", sample{allocs: 0}, sample{allocs: 1024, objects: 90 * mib, live: 100 * mib, free: 60 * mib}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := worthTrimming(tt.prev, tt.cur); got != tt.want {
				t.Errorf("worthTrimming = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestRunReturnsMemory: after a burst of garbage and a quiet period, Run
// gives the freed memory back.
func TestRunReturnsMemory(t *testing.T) {
	released := func() uint64 {
		s := []metrics.Sample{{Name: "/memory/classes/heap/released:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	var keep [][]byte
	for range 64 {
		keep = append(keep, make([]byte, 1<<20))
	}
	// Measured while the burst's memory is in use: allocating it may have
	// taken back memory released before.
	before := released()
	runtime.KeepAlive(keep)
	keep = nil
	runtime.GC() // the burst's memory is now free but kept by the runtime
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, 20*time.Millisecond, slog.New(slog.DiscardHandler))
	}()
	deadline := time.Now().Add(10 * time.Second)
	for released() < before+32<<20 {
		if time.Now().After(deadline) {
			t.Fatalf("released %d MiB more, want at least 32", (released()-before)>>20)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
}
