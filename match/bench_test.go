package match

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/gyrehq/gyre/internal/matchload"
)

// The workload (internal/matchload): five-token topics over a vocabulary of
// 10–20 words per level, patterns with about 22 % "*" tokens, some ending
// with ">", half the topics made from a pattern. bench/match runs the same
// against NATS's Sublist.

var sizes = []int{1_000, 100_000}

func newLoadedIndex(b *testing.B, patterns []string) *Index[int] {
	b.Helper()
	x := NewIndex[int]()
	for i, p := range patterns {
		if err := x.Set(p, i); err != nil {
			b.Fatal(err)
		}
	}
	return x
}

func BenchmarkMatch(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("patterns=%d", n), func(b *testing.B) {
			patterns := matchload.Patterns(n, 1)
			topics := matchload.Topics(4096, patterns, 2)
			x := newLoadedIndex(b, patterns)
			matches := 0
			count := func(int) bool { matches++; return true }
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				x.Match(topics[i%len(topics)], count)
			}
			b.ReportMetric(float64(matches)/float64(b.N), "matches/op")
		})
	}
}

// BenchmarkConcurrent runs GOMAXPROCS goroutines (2 on the reference
// machine) that each do 9 Matches for every Set or Delete, on an index of
// 1,000 patterns; lookups/s is the Matches of all goroutines over the wall
// time.
func BenchmarkConcurrent(b *testing.B) {
	patterns := matchload.Patterns(2_000, 1)
	stable, churn := patterns[:1_000], patterns[1_000:]
	topics := matchload.Topics(4096, stable, 2)
	x := newLoadedIndex(b, stable)
	var lookups atomic.Int64
	var worker atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		// Each goroutine churns its own share of the patterns: a Set adds
		// one, the next write deletes it.
		w := int(worker.Add(1))
		n, i := 0, w*7919
		for pb.Next() {
			i++
			if i%10 != 0 {
				x.Match(topics[i%len(topics)], func(int) bool { return true })
				n++
				continue
			}
			p := churn[(i/20*2+w)%len(churn)]
			if i%20 == 0 {
				_ = x.Set(p, i)
			} else {
				x.Delete(p)
			}
		}
		lookups.Add(int64(n))
	})
	b.ReportMetric(float64(lookups.Load())/b.Elapsed().Seconds(), "lookups/s")
}

// BenchmarkSet and BenchmarkDelete add and remove batches of 100 patterns
// absent from an index of n; the timer runs only for the operation measured.
func BenchmarkSet(b *testing.B)    { benchWrite(b, true) }
func BenchmarkDelete(b *testing.B) { benchWrite(b, false) }

func benchWrite(b *testing.B, set bool) {
	const batch = 100
	for _, n := range sizes {
		b.Run(fmt.Sprintf("patterns=%d", n), func(b *testing.B) {
			patterns := matchload.Patterns(n+10*batch, 1)
			x := newLoadedIndex(b, patterns[:n])
			extra := patterns[n:]
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; {
				ps := extra[(done/batch*batch)%len(extra):][:min(batch, b.N-done)]
				if !set {
					b.StopTimer()
				}
				for i, p := range ps {
					_ = x.Set(p, i)
				}
				if set {
					b.StopTimer()
				} else {
					b.StartTimer()
				}
				for _, p := range ps {
					x.Delete(p)
				}
				if !set {
					b.StopTimer()
				}
				done += len(ps)
				b.StartTimer()
			}
		})
	}
}

// BenchmarkMemory reports the live heap an index of n patterns takes, per
// pattern, after a GC: nodes, tables, copies of tokens and the boxed values.
// The pattern strings themselves are the caller's and not counted.
func BenchmarkMemory(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("patterns=%d", n), func(b *testing.B) {
			patterns := matchload.Patterns(n, 1)
			var perPattern float64
			for b.Loop() {
				before := liveHeap()
				x := newLoadedIndex(b, patterns)
				perPattern = float64(int64(liveHeap())-int64(before)) / float64(n)
				runtime.KeepAlive(x)
			}
			b.ReportMetric(perPattern, "B/pattern")
		})
	}
}

func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
