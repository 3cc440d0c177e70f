package match

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestConcurrent runs writers that Set and Delete continuously while readers
// Match. Churned patterns share prefixes with permanent ones and make the
// tables on the readers' paths grow, shrink and be replaced, and nodes be
// pruned and made again. A reader must always see every permanent pattern
// that matches its topic, each value at most once, and only values of
// patterns that were inserted and match the topic.
func TestConcurrent(t *testing.T) {
	const permanent = 64
	var (
		patterns []string // value i is the value of patterns[i]
		topics   []string
		x        Index[int]
	)
	for i := range permanent {
		patterns = append(patterns, fmt.Sprintf("r%d.k%d.*", i%4, i))
		topics = append(topics, fmt.Sprintf("r%d.k%d.z", i%4, i))
	}
	patterns = append(patterns, "r0.>", "*.k1.*")
	for i, p := range patterns {
		mustSet(t, &x, p, i)
	}
	stable := len(patterns)
	// The churn: siblings of permanent nodes (the tables that hold them fill
	// with tombstones, grow, shrink and are replaced), wildcard variants, and
	// deeper chains under permanent nodes that come and go.
	for i := range 300 {
		patterns = append(patterns,
			fmt.Sprintf("r%d.c%d.*", i%4, i),
			fmt.Sprintf("r%d.k%d.*.>", i%4, i%permanent),
			fmt.Sprintf("*.k%d.c%d.*", i%permanent, i))
	}
	topics = append(topics, "r1.c7.y", "r2.k3.z.w", "q.k5.c5.e")
	// want[i] lists the stable values that match topics[i]; may[i] every
	// value that may be seen for it.
	want := make([][]int, len(topics))
	may := make([]map[int]bool, len(topics))
	for i, topic := range topics {
		may[i] = map[int]bool{}
		for v, p := range patterns {
			if naiveMatch(p, topic) {
				may[i][v] = true
				if v < stable {
					want[i] = append(want[i], v)
				}
			}
		}
	}

	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for !stop.Load() {
				v := stable + rng.IntN(len(patterns)-stable)
				if rng.IntN(2) == 0 {
					if err := x.Set(patterns[v], v); err != nil {
						t.Error(err)
						return
					}
				} else {
					x.Delete(patterns[v])
				}
			}
		})
	}
	var lookups atomic.Int64
	errs := make(chan error, 4)
	for r := range 4 {
		wg.Go(func() {
			seen := make([]int, len(patterns))
			for n := 1; !stop.Load(); n++ {
				i := (r + n) % len(topics)
				x.Match(topics[i], func(v int) bool {
					if v < 0 || v >= len(patterns) || !may[i][v] || seen[v] == n {
						errs <- fmt.Errorf("Match(%q) gave value %d (pattern known: %v, seen before in this call: %v)",
							topics[i], v, v >= 0 && v < len(patterns), v >= 0 && v < len(patterns) && seen[v] == n)
						stop.Store(true)
						return false
					}
					seen[v] = n
					return true
				})
				for _, v := range want[i] {
					if seen[v] != n && !stop.Load() {
						errs <- fmt.Errorf("Match(%q) missed permanent pattern %q", topics[i], patterns[v])
						stop.Store(true)
					}
				}
				lookups.Add(1)
			}
		})
	}
	time.Sleep(500 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d lookups", lookups.Load())
}
