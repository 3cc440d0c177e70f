package loadtest

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
)

func TestBucketResolution(t *testing.T) {
	values := []uint64{0, 1, 63, 64, 65, 127, 128, 1000, 4095, 4096, 1e6, 123456789, 1 << 39, 1<<40 - 1}
	for _, v := range values {
		i := bucketOf(v)
		if i < 0 || i >= numBuckets {
			t.Fatalf("bucketOf(%d) = %d, out of range", v, i)
		}
		mid := bucketMid(i)
		if diff := math.Abs(float64(mid) - float64(v)); diff > float64(v)/subBuckets+0.5 {
			t.Errorf("value %d: bucket %d reports %d, off by more than 1/%d", v, i, mid, subBuckets)
		}
	}
	// Buckets are ordered: a larger value never lands in an earlier one.
	prev := 0
	for v := uint64(0); v < 1<<20; v += 7 {
		i := bucketOf(v)
		if i < prev {
			t.Fatalf("bucketOf(%d) = %d < %d", v, i, prev)
		}
		prev = i
	}
	if bucketOf(math.MaxUint64) != numBuckets-1 {
		t.Fatal("huge values must land in the last bucket")
	}
}

func TestQuantiles(t *testing.T) {
	tests := []struct {
		name   string
		values []int64
		q      float64
		want   float64
	}{
		{"empty", nil, 0.5, 0},
		{"one", []int64{1000}, 0.99, 1000},
		{"negative is zero", []int64{-5}, 0.5, 0},
		{"median of 1..1000", seq(1000), 0.5, 500},
		{"p99 of 1..1000", seq(1000), 0.99, 990},
		{"p999 of 1..10000", seq(10000), 0.999, 9990},
		{"max", seq(100), 1, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h histogram
			for _, v := range tt.values {
				h.record(v)
			}
			got := float64(h.quantile(tt.q))
			if math.Abs(got-tt.want) > tt.want/subBuckets+1 {
				t.Fatalf("quantile(%v) = %v, want %v within 1/%d", tt.q, got, tt.want, subBuckets)
			}
		})
	}
}

func seq(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i + 1)
	}
	return out
}

// TestQuantilesRandom compares with exact percentiles of random samples.
func TestQuantilesRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h histogram
	vals := make([]float64, 50000)
	for i := range vals {
		v := math.Exp(r.NormFloat64()*2 + 12) // log-normal around 160µs
		vals[i] = math.Floor(v)
		h.record(int64(vals[i]))
	}
	sort.Float64s(vals)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		exact := vals[int(math.Ceil(q*float64(len(vals))))-1]
		got := float64(h.quantile(q))
		if math.Abs(got-exact) > exact/subBuckets+1 {
			t.Errorf("q%v: %v, exact %v", q, got, exact)
		}
	}
}

// TestMerge: a histogram sent through JSON and merged equals one that
// recorded everything itself.
func TestMerge(t *testing.T) {
	var a, b, all histogram
	for i := range int64(5000) {
		v := i * i
		all.record(v)
		if i%3 == 0 {
			a.record(v)
		} else {
			b.record(v)
		}
	}
	var m histogram
	for _, h := range []*histogram{&a, &b} {
		raw, err := json.Marshal(h.snapshot())
		if err != nil {
			t.Fatal(err)
		}
		var s histSnapshot
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		m.merge(s)
	}
	if got, want := m.percentiles(), all.percentiles(); got != want {
		t.Fatalf("merged %+v, want %+v", got, want)
	}
	// Buckets a peer cannot have are ignored, not a panic.
	m.merge(histSnapshot{Buckets: [][2]uint64{{numBuckets + 5, 1}}})
}

func TestRecordConcurrent(t *testing.T) {
	var h histogram
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				h.record(int64(g*1000 + i))
			}
		}()
	}
	wg.Wait()
	p := h.percentiles()
	if p.Count != 8000 || p.Max != 7.999 {
		t.Fatalf("%+v: want 8000 samples, max 7.999µs", p)
	}
}

func BenchmarkRecord(b *testing.B) {
	b.ReportAllocs()
	var h histogram
	b.RunParallel(func(pb *testing.PB) {
		v := int64(1000)
		for pb.Next() {
			h.record(v)
			v = v*7%1000003 + 1
		}
	})
}
