package loadtest

import (
	"math"
	"math/bits"
	"sync/atomic"
)

// The histogram is log-linear: values below subBuckets are counted
// exactly, larger ones in subBuckets buckets per power of two, so a
// percentile is off by at most 1/subBuckets (1.6%) of its value. Values
// are nanoseconds; anything above 2^maxExp ns (18 minutes) lands in the
// last bucket.
const (
	subBits    = 6
	subBuckets = 1 << subBits
	maxExp     = 40
	numBuckets = subBuckets + (maxExp-subBits+1)*subBuckets
)

// histogram counts durations from many goroutines at once without a lock:
// every connection of a worker records into the same one, and a mutex
// there would serialise the readers of a fan-out. A record is one atomic
// add (and a read of max): totals and the mean are worked out from the
// buckets when asked for, so that no counter is written by every
// goroutine on every record.
type histogram struct {
	counts [numBuckets]atomic.Uint64
	max    atomic.Uint64
}

func bucketOf(v uint64) int {
	if v < subBuckets {
		return int(v)
	}
	e := bits.Len64(v) - 1
	if e > maxExp {
		return numBuckets - 1
	}
	sub := (v >> (e - subBits)) & (subBuckets - 1)
	return subBuckets + (e-subBits)*subBuckets + int(sub)
}

// bucketMid is the middle of bucket i's range, the value a percentile
// that falls into it is reported as.
func bucketMid(i int) uint64 {
	if i < subBuckets {
		return uint64(i)
	}
	e := (i-subBuckets)/subBuckets + subBits
	sub := uint64((i - subBuckets) % subBuckets)
	width := uint64(1) << (e - subBits)
	low := uint64(1)<<e + sub*width
	return low + width/2
}

// record counts one value in nanoseconds; negative values (a clock step
// between two processes) count as zero.
func (h *histogram) record(ns int64) {
	v := nonNegative(ns)
	h.recordRun(bucketOf(v), 1, v)
}

func nonNegative(ns int64) uint64 {
	if ns > 0 {
		return uint64(ns)
	}
	return 0
}

// recordRun counts n values that fall into bucket b, the largest of them
// being v: a reader adds the deliveries of a frame, whose latencies are
// mostly in one bucket, with one atomic add instead of one each.
func (h *histogram) recordRun(b int, n, v uint64) {
	h.counts[b].Add(n)
	for {
		m := h.max.Load()
		if v <= m || h.max.CompareAndSwap(m, v) {
			return
		}
	}
}

// histSnapshot is a histogram as it travels between processes: only the
// buckets in use, as index and count pairs.
type histSnapshot struct {
	Buckets [][2]uint64 `json:"buckets,omitempty"`
	Max     uint64      `json:"max"`
}

func (h *histogram) snapshot() histSnapshot {
	s := histSnapshot{Max: h.max.Load()}
	for i := range h.counts {
		if c := h.counts[i].Load(); c > 0 {
			s.Buckets = append(s.Buckets, [2]uint64{uint64(i), c})
		}
	}
	return s
}

// total is the number of values recorded.
func (h *histogram) total() uint64 {
	var n uint64
	for i := range h.counts {
		n += h.counts[i].Load()
	}
	return n
}

// merge adds a snapshot from another histogram; buckets out of range
// (a peer built differently) are ignored.
func (h *histogram) merge(s histSnapshot) {
	for _, b := range s.Buckets {
		if b[0] < numBuckets {
			h.counts[b[0]].Add(b[1])
		}
	}
	for {
		m := h.max.Load()
		if s.Max <= m || h.max.CompareAndSwap(m, s.Max) {
			return
		}
	}
}

// quantile returns the value at q (0..1) in nanoseconds, 0 when empty.
func (h *histogram) quantile(q float64) uint64 {
	total := h.total()
	if total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(total)))
	if rank == 0 {
		rank = 1
	}
	var seen uint64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			return min(bucketMid(i), h.max.Load())
		}
	}
	return h.max.Load()
}

// Percentiles summarises a distribution of durations in microseconds;
// all but Count and Max are within 1.6% of the exact value.
type Percentiles struct {
	Count uint64  `json:"count"`
	Mean  float64 `json:"mean_us"`
	P50   float64 `json:"p50_us"`
	P99   float64 `json:"p99_us"`
	P999  float64 `json:"p999_us"`
	Max   float64 `json:"max_us"`
}

func (h *histogram) percentiles() Percentiles {
	p := Percentiles{Count: h.total()}
	if p.Count == 0 {
		return p
	}
	us := func(ns uint64) float64 { return float64(ns) / 1e3 }
	var sum float64
	for i := range h.counts {
		if c := h.counts[i].Load(); c > 0 {
			sum += float64(c) * float64(bucketMid(i))
		}
	}
	p.Mean = sum / 1e3 / float64(p.Count)
	p.P50 = us(h.quantile(0.50))
	p.P99 = us(h.quantile(0.99))
	p.P999 = us(h.quantile(0.999))
	p.Max = us(h.max.Load())
	return p
}
