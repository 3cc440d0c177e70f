package redis

import (
	"hash/fnv"
	"strconv"
	"testing"

	"github.com/redis/rueidis"
)

func TestJumpHash(t *testing.T) {
	for _, tt := range []struct {
		name string
		n    int
	}{
		{"One", 1},
		{"Two", 2},
		{"Ten", 10},
	} {
		t.Run(tt.name, func(t *testing.T) {
			counts := make([]int, tt.n)
			for i := range 10000 {
				b := jumpHash(channelHash("chan"+strconv.Itoa(i)), tt.n)
				if b < 0 || b >= tt.n {
					t.Fatalf("bucket %d out of [0, %d)", b, tt.n)
				}
				counts[b]++
			}
			for b, c := range counts {
				if want := 10000 / tt.n; c < want/2 || c > want*3/2 {
					t.Errorf("bucket %d got %d of 10000 keys, want about %d", b, c, want)
				}
			}
		})
	}
}

// TestJumpHashMovesFew: growing from n to n+1 buckets moves a key only to
// the new bucket, never between old ones.
func TestJumpHashMovesFew(t *testing.T) {
	for n := 1; n < 8; n++ {
		moved := 0
		for i := range 5000 {
			k := channelHash("chan" + strconv.Itoa(i))
			a, b := jumpHash(k, n), jumpHash(k, n+1)
			if a != b {
				if b != n {
					t.Fatalf("key %d moved from %d to old bucket %d when growing to %d", i, a, b, n+1)
				}
				moved++
			}
		}
		if want := 5000 / (n + 1); moved < want/2 || moved > want*3/2 {
			t.Errorf("growing to %d buckets moved %d of 5000 keys, want about %d", n+1, moved, want)
		}
	}
}

// TestFNVStable pins the hash: changing it would move every channel of a
// running sharded setup.
func TestFNVStable(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want uint64
	}{
		{"", 14695981039346656037},
		{"a", 0xaf63dc4c8601ec8c},
		{"chat:index", fnv64aRef("chat:index")},
	} {
		if got := fnv64a(tt.in); got != tt.want {
			t.Errorf("fnv64a(%q) = %#x, want %#x", tt.in, got, tt.want)
		}
	}
}

func fnv64aRef(s string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(s))
	return h.Sum64()
}

// TestShardSpread: names differing only in their last character spread
// over the shards like any others.
func TestShardSpread(t *testing.T) {
	e := &Engine{clients: make([]rueidis.Client, 1), bases: make([]string, 8)}
	counts := make([]int, len(e.bases))
	for c := 'a'; c <= 'z'; c++ {
		for d := '0'; d <= '9'; d++ {
			_, s := e.locate("chat:" + string(c) + string(d))
			counts[s]++
		}
	}
	for s, n := range counts {
		if n < 260/8/2 || n > 260/8*2 {
			t.Errorf("shard %d got %d of 260 channels", s, n)
		}
	}
}
