package memory

import (
	"reflect"
	"testing"

	"github.com/gyrehq/gyre/broker"
)

func ringOffsets(r *ring) []uint64 {
	var out []uint64
	for i := range r.len() {
		out = append(out, r.at(i).pub.Offset)
	}
	return out
}

func TestRing(t *testing.T) {
	type step struct {
		push    uint64 // offset to push, 0 = none
		size    int
		expires int64
		drop    int64 // dropExpired(now) when non-zero
	}
	for _, tt := range []struct {
		name   string
		steps  []step
		want   []uint64
		maxBuf int
	}{
		{"BelowSize", []step{{1, 5, 9, 0}, {2, 5, 9, 0}}, []uint64{1, 2}, 4},
		{"EvictsOldest", []step{{1, 2, 9, 0}, {2, 2, 9, 0}, {3, 2, 9, 0}}, []uint64{2, 3}, 2},
		{"GrowsOnDemand", func() []step {
			var s []step
			for o := uint64(1); o <= 10; o++ {
				s = append(s, step{o, 1000, 9, 0})
			}
			return s
		}(), []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 16},
		{"Shrinks", func() []step {
			var s []step
			for o := uint64(1); o <= 20; o++ {
				s = append(s, step{o, 100, 9, 0})
			}
			return append(s, step{21, 2, 9, 0})
		}(), []uint64{20, 21}, 2},
		{"DropsExpiredFront", []step{{1, 5, 1, 0}, {2, 5, 2, 0}, {3, 5, 5, 0}, {0, 0, 0, 2}}, []uint64{3}, 4},
		{"StopsAtLiveFront", []step{{1, 5, 9, 0}, {2, 5, 1, 0}, {0, 0, 0, 5}}, []uint64{1, 2}, 4},
		{"WrapsAround", []step{{1, 3, 9, 0}, {2, 3, 9, 0}, {3, 3, 9, 0}, {4, 3, 9, 0}, {5, 3, 9, 0}}, []uint64{3, 4, 5}, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var r ring
			for _, s := range tt.steps {
				if s.push != 0 {
					r.push(histEntry{pub: &broker.Publication{Offset: s.push}, expires: s.expires}, s.size)
				}
				if s.drop != 0 {
					r.dropExpired(s.drop)
				}
			}
			if got := ringOffsets(&r); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("offsets = %v, want %v", got, tt.want)
			}
			if len(r.buf) > tt.maxBuf {
				t.Errorf("buffer holds %d slots, want at most %d", len(r.buf), tt.maxBuf)
			}
			for i := r.len(); i < len(r.buf); i++ {
				if e := r.buf[(r.head+i)%len(r.buf)]; e.pub != nil {
					t.Errorf("free slot %d still references offset %d", i, e.pub.Offset)
				}
			}
		})
	}
}
