package fossil

import (
	"math/rand/v2"
	"testing"
)

// TestRollingHash checks that rolling the window gives the hash of the block it lands
// on: were they to differ, no source block would ever be found.
func TestRollingHash(t *testing.T) {
	b := randomBytes(rand.New(rand.NewPCG(41, 43)), 500)
	h := hashBlock(b)
	for i := 1; i+blockSize <= len(b); i++ {
		h = rollHash(h, b[i-1], b[i-1+blockSize])
		if want := hashBlock(b[i:]); h != want {
			t.Fatalf("rolled hash at %d = %#x, hash of the block = %#x", i, h, want)
		}
	}
}

// TestIndexChains checks that every source block can be found through its bucket.
func TestIndexChains(t *testing.T) {
	for _, size := range []int{blockSize, 100, 1000, 40000} {
		src := randomBytes(rand.New(rand.NewPCG(uint64(size), 1)), size)
		ix := newIndex(src)
		for blk := range size / blockSize {
			found := false
			for c := ix.head[ix.bucket(hashBlock(src[blk*blockSize:]))]; c != 0; c = ix.next[c-1] {
				found = found || int(c-1) == blk
			}
			if !found {
				t.Fatalf("size %d: block %d is not in its bucket", size, blk)
			}
		}
		ix.free()
	}
}

func TestCommonPrefixSuffix(t *testing.T) {
	base := randomBytes(rand.New(rand.NewPCG(47, 53)), 2000)
	for _, n := range []int{0, 1, 7, 8, 9, 255, 256, 257, 600, 1999, 2000} {
		other := append([]byte(nil), base...)
		if n < len(other) {
			other[n] ^= 0xFF
		}
		if got := commonPrefix(base, other); got != n {
			t.Errorf("commonPrefix with a difference at %d = %d", n, got)
		}
		if got := commonPrefix(base[:n], base); got != n {
			t.Errorf("commonPrefix of a %d-byte prefix = %d", n, got)
		}
		rev := append([]byte(nil), base...)
		if n < len(rev) {
			rev[len(rev)-1-n] ^= 0xFF
		}
		if got := commonSuffix(base, rev); got != n {
			t.Errorf("commonSuffix with a difference %d from the end = %d", n, got)
		}
	}
}
