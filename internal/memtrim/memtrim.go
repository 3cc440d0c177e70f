// Package memtrim gives memory back to the operating system once a burst
// of allocation is over.
//
// A connection server's heap grows in waves (thousands of clients
// connecting at once) and then sits still: idle connections allocate next
// to nothing. The Go runtime keeps what a wave freed up to its heap goal,
// twice the live heap by default, so a quiet server holds about twice the
// memory its connections need until something allocates enough to trigger
// the next collection. Collecting sooner all the time (a lower GOGC) fixes
// that but makes every wave cost more collections. Run instead waits for
// the wave to pass and then collects once and returns the freed memory.
package memtrim

import (
	"context"
	"log/slog"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// sample is what the decision to trim looks at.
type sample struct {
	// allocs is the total allocated since the process started.
	allocs uint64
	// objects is the heap held by objects, live or not yet swept.
	objects uint64
	// live is the heap found live by the last collection.
	live uint64
	// free is heap memory that is free but not returned to the system.
	free uint64
}

var metricNames = []string{
	"/gc/heap/allocs:bytes",
	"/memory/classes/heap/objects:bytes",
	"/gc/heap/live:bytes",
	"/memory/classes/heap/free:bytes",
}

func read(buf []metrics.Sample) sample {
	metrics.Read(buf)
	v := func(i int) uint64 {
		if buf[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return buf[i].Value.Uint64()
	}
	return sample{allocs: v(0), objects: v(1), live: v(2), free: v(3)}
}

// Thresholds of worthTrimming.
const (
	// quietShare: a period is quiet when it allocated less than this share
	// of the live heap.
	quietShare = 8
	// retainedShare: trimming is worth it when the memory held beyond the
	// live heap is more than this share of it...
	retainedShare = 4
	// minRetained: ...and more than this.
	minRetained = 4 << 20
)

// worthTrimming reports whether, between prev and cur, the process was
// quiet and holds enough memory beyond its live heap to give back.
func worthTrimming(prev, cur sample) bool {
	allocated := cur.allocs - prev.allocs
	if allocated > max(1<<20, cur.live/quietShare) {
		return false // a wave is still going: it will need the memory
	}
	var dead uint64
	if cur.objects > cur.live {
		dead = cur.objects - cur.live
	}
	retained := dead + cur.free
	return retained > max(minRetained, cur.live/retainedShare)
}

// Run checks every period until ctx ends, and after a quiet period that
// left memory to give back, collects and returns it (debug.FreeOSMemory).
func Run(ctx context.Context, period time.Duration, log *slog.Logger) {
	buf := make([]metrics.Sample, len(metricNames))
	for i, name := range metricNames {
		buf[i].Name = name
	}
	t := time.NewTicker(period)
	defer t.Stop()
	prev := read(buf)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cur := read(buf)
		if worthTrimming(prev, cur) {
			start := time.Now()
			debug.FreeOSMemory()
			after := read(buf)
			log.Debug("memory returned to the system after a burst",
				"live_bytes", after.live, "released_bytes", int64(cur.objects+cur.free)-int64(after.objects+after.free),
				"took", time.Since(start))
			cur = after
		}
		prev = cur
	}
}
