package match

import (
	"testing"

	"github.com/gyrehq/gyre/internal/matchload"
)

// TestAgree checks that every side finds the same number of matches for
// every topic of the workload, before and after deleting some patterns, so
// that the benchmarks compare the same work.
func TestAgree(t *testing.T) {
	patterns := matchload.Patterns(20_000, 1)
	topics := matchload.Topics(2_000, patterns, 2)
	loadedSides := make([]side, len(sides))
	for i, mk := range sides {
		loadedSides[i] = loaded(mk, patterns, len(patterns))
	}
	compare := func(stage string) {
		total := 0
		for _, topic := range topics {
			want := loadedSides[0].count(topic)
			total += want
			for i, s := range loadedSides[1:] {
				if got := s.count(topic); got != want {
					t.Fatalf("%s: %s finds %d matches of %q, %s %d", stage, sides[i+1].name, got, topic, sides[0].name, want)
				}
			}
		}
		if total == 0 {
			t.Fatalf("%s: no topic matches anything", stage)
		}
		t.Logf("%s: %.1f matches per topic", stage, float64(total)/float64(len(topics)))
	}
	compare("loaded")
	for i := 0; i < len(patterns); i += 3 {
		for _, s := range loadedSides {
			s.del(i)
		}
	}
	compare("after deletes")
}
