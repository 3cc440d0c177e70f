package fossil

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkCreate measures the hot path: one delta per publication into a reused buffer,
// for JSON documents with a few changed values. "saved" is the share of the target's
// bytes the delta spares the wire.
func BenchmarkCreate(b *testing.B) {
	cases := []struct {
		name        string
		size, edits int
	}{
		{"json 1KB 1 edit", 1 << 10, 1},
		{"json 10KB 3 edits", 10 << 10, 3},
		{"json 10KB 30 edits", 10 << 10, 30},
		{"json 100KB 10 edits", 100 << 10, 10},
	}
	for _, c := range cases {
		src, tgt := similarJSON(uint64(c.size), c.size, c.edits)
		b.Run(c.name, func(b *testing.B) {
			benchCreate(b, src, tgt)
		})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	b.Run("unrelated 10KB", func(b *testing.B) {
		benchCreate(b, randomBytes(rng, 10<<10), randomBytes(rng, 10<<10))
	})
	same := randomBytes(rng, 10<<10)
	b.Run("identical 10KB", func(b *testing.B) {
		benchCreate(b, same, same)
	})
}

func benchCreate(b *testing.B, src, tgt []byte) {
	b.ReportAllocs()
	b.SetBytes(int64(len(tgt)))
	buf := make([]byte, 0, len(tgt)+64)
	for b.Loop() {
		buf = AppendCreate(buf[:0], src, tgt)
	}
	b.ReportMetric(1-float64(len(buf))/float64(len(tgt)), "saved")
	b.ReportMetric(float64(len(buf)), "delta-bytes")
}

// BenchmarkCreateNew is Create without a reused buffer, as a caller that keeps the delta.
func BenchmarkCreateNew(b *testing.B) {
	src, tgt := similarJSON(10<<10, 10<<10, 3)
	b.ReportAllocs()
	b.SetBytes(int64(len(tgt)))
	for b.Loop() {
		Create(src, tgt)
	}
}

func BenchmarkApply(b *testing.B) {
	cases := []struct {
		name        string
		size, edits int
	}{
		{"json 10KB 3 edits", 10 << 10, 3},
		{"json 100KB 10 edits", 100 << 10, 10},
	}
	for _, c := range cases {
		src, tgt := similarJSON(uint64(c.size), c.size, c.edits)
		d := Create(src, tgt)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(tgt)))
			for b.Loop() {
				if _, err := Apply(src, d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
