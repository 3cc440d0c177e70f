package match

import (
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/gyrehq/gyre/internal/matchload"
)

var sizes = []int{1_000, 100_000}

// BenchmarkMatch matches topics of the workload, 4,096 distinct ones in
// turn (more than NATS's cache keeps: it holds up to 1,024 results and
// sweeps down to 256).
func BenchmarkMatch(b *testing.B) {
	for _, n := range sizes {
		patterns := matchload.Patterns(n, 1)
		topics := matchload.Topics(4096, patterns, 2)
		for _, mk := range sides {
			b.Run(mk.name+"/"+sizeName(n), func(b *testing.B) { benchMatch(b, mk, patterns, topics, n) })
		}
	}
}

// BenchmarkMatchHot matches 256 distinct topics in turn: few enough for
// NATS's cache to hold them all.
func BenchmarkMatchHot(b *testing.B) {
	const n = 1_000
	patterns := matchload.Patterns(n, 1)
	topics := matchload.Topics(256, patterns, 2)
	for _, mk := range sides {
		b.Run(mk.name+"/"+sizeName(n), func(b *testing.B) { benchMatch(b, mk, patterns, topics, n) })
	}
}

// benchMatch measures Match on mk's side loaded with the first n
// patterns, over topics in turn.
func benchMatch(b *testing.B, mk sideMaker, patterns, topics []string, n int) {
	s := loaded(mk, patterns, n)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		s.match(topics[i%len(topics)])
	}
}

// BenchmarkConcurrent runs GOMAXPROCS goroutines (2 here) on an index of
// 1,000 patterns, each doing 9 Matches for every Set or Delete of one of
// 1,000 more patterns; lookups/s counts the Matches of all goroutines over
// the wall time.
func BenchmarkConcurrent(b *testing.B) {
	const n = 1_000
	patterns := matchload.Patterns(2*n, 1)
	topics := matchload.Topics(4096, patterns[:n], 2)
	for _, mk := range sides {
		b.Run(mk.name+"/"+sizeName(n), func(b *testing.B) {
			s := loaded(mk, patterns, n)
			var lookups, worker atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				// Each goroutine sets and deletes its own patterns: even
				// ones in the first goroutine, odd in the second.
				w := int(worker.Add(1))
				matched, i := 0, w*7919
				for pb.Next() {
					i++
					if i%10 != 0 {
						s.(matcher).matchShared(topics[i%len(topics)])
						matched++
						continue
					}
					p := n + (i/20*2+w)%n
					if i%20 == 0 {
						s.set(p)
					} else {
						s.del(p)
					}
				}
				lookups.Add(int64(matched))
			})
			b.ReportMetric(float64(lookups.Load())/b.Elapsed().Seconds(), "lookups/s")
		})
	}
}

// matcher is the Match of a side without the side's own state, for use from
// several goroutines.
type matcher interface{ matchShared(topic string) }

func (s *gyreSide) matchShared(topic string) { s.x.Match(topic, func(int) bool { return true }) }
func (s *natsSide) matchShared(topic string) { _ = s.sl.Match(topic) }
func (s *gslSide) matchShared(topic string)  { s.sl.Match(topic, func(int) {}) }

// BenchmarkSet and BenchmarkDelete add or remove 100 patterns, absent from
// an index of n, per round; only the operation measured is timed.
func BenchmarkSet(b *testing.B)    { benchWrite(b, true) }
func BenchmarkDelete(b *testing.B) { benchWrite(b, false) }

func benchWrite(b *testing.B, set bool) {
	const batch = 100
	for _, n := range sizes {
		patterns := matchload.Patterns(n+10*batch, 1)
		for _, mk := range sides {
			b.Run(mk.name+"/"+sizeName(n), func(b *testing.B) {
				s := loaded(mk, patterns, n)
				b.ReportAllocs()
				b.ResetTimer()
				for done := 0; done < b.N; {
					first := n + (done/batch*batch)%(10*batch)
					k := min(batch, b.N-done)
					if !set {
						b.StopTimer()
					}
					for i := first; i < first+k; i++ {
						s.set(i)
					}
					if set {
						b.StopTimer()
					} else {
						b.StartTimer()
					}
					for i := first; i < first+k; i++ {
						s.del(i)
					}
					if !set {
						b.StopTimer()
					}
					done += k
					b.StartTimer()
				}
			})
		}
	}
}

// BenchmarkMemory reports the live heap after a GC that an index of n
// patterns takes, per pattern. The pattern strings and NATS's subscriptions
// exist before the first measurement and are not counted; what NATS copies
// of them is.
func BenchmarkMemory(b *testing.B) {
	for _, n := range sizes {
		patterns := matchload.Patterns(n, 1)
		for _, mk := range sides {
			if mk.name == "nats-cache" {
				continue // the same structure as nats-nocache until matches fill the cache
			}
			b.Run(mk.name+"/"+sizeName(n), func(b *testing.B) {
				var perPattern float64
				for b.Loop() {
					s := mk.make(patterns)
					before := liveHeap()
					for i := range n {
						s.set(i)
					}
					perPattern = float64(int64(liveHeap())-int64(before)) / float64(n)
					runtime.KeepAlive(s)
				}
				b.ReportMetric(perPattern, "B/pattern")
			})
		}
	}
}
