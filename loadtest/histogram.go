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
// there would serialise the readers of a fan-out.
type histogram struct {
	counts [numBuckets]atomic.Uint64
	total  atomic.Uint64
	sum    atomic.Uint64
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
	v := uint64(0)
	if ns > 0 {
		v = uint64(ns)
	}
	h.counts[bucketOf(v)].Add(1)
	h.total.Add(1)
	h.sum.Add(v)
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
	Count   uint64      `json:"count"`
	Sum     uint64      `json:"sum"`
	Max     uint64      `json:"max"`
}

func (h *histogram) snapshot() histSnapshot {
	s := histSnapshot{Count: h.total.Load(), Sum: h.sum.Load(), Max: h.max.Load()}
	for i := range h.counts {
		if c := h.counts[i].Load(); c > 0 {
			s.Buckets = append(s.Buckets, [2]uint64{uint64(i), c})
		}
	}
	return s
}

// merge adds a snapshot from another histogram; buckets out of range
// (a peer built differently) are ignored.
func (h *histogram) merge(s histSnapshot) {
	for _, b := range s.Buckets {
		if b[0] < numBuckets {
			h.counts[b[0]].Add(b[1])
		}
	}
	h.total.Add(s.Count)
	h.sum.Add(s.Sum)
	for {
		m := h.max.Load()
		if s.Max <= m || h.max.CompareAndSwap(m, s.Max) {
			return
		}
	}
}

// quantile returns the value at q (0..1) in nanoseconds, 0 when empty.
func (h *histogram) quantile(q float64) uint64 {
	total := h.total.Load()
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

// Percentiles summarises a distribution of durations in microseconds.
type Percentiles struct {
	Count uint64  `json:"count"`
	Mean  float64 `json:"mean_us"`
	P50   float64 `json:"p50_us"`
	P99   float64 `json:"p99_us"`
	P999  float64 `json:"p999_us"`
	Max   float64 `json:"max_us"`
}

func (h *histogram) percentiles() Percentiles {
	p := Percentiles{Count: h.total.Load()}
	if p.Count == 0 {
		return p
	}
	us := func(ns uint64) float64 { return float64(ns) / 1e3 }
	p.Mean = us(h.sum.Load()) / float64(p.Count)
	p.P50 = us(h.quantile(0.50))
	p.P99 = us(h.quantile(0.99))
	p.P999 = us(h.quantile(0.999))
	p.Max = us(h.max.Load())
	return p
}
