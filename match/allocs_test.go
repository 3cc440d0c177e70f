package match

import (
	"testing"

	"github.com/gyrehq/gyre/internal/matchload"
)

// TestReadersDoNotAllocate holds the readers to their budget: no allocation,
// whatever the index holds (AppendMatches: none while dst has room).
func TestReadersDoNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	patterns := matchload.Patterns(1000, 1)
	topics := matchload.Topics(64, patterns, 2)
	var x Index[int]
	for i, p := range patterns {
		mustSet(t, &x, p, i)
	}
	dst := make([]int, 0, 1000)
	i := 0
	for name, read := range map[string]func(){
		"Match":         func() { x.Match(topics[i%len(topics)], func(int) bool { return true }) },
		"AppendMatches": func() { dst = x.AppendMatches(dst[:0], topics[i%len(topics)]) },
		"Get":           func() { x.Get(patterns[i%len(patterns)]) },
		"Len":           func() { x.Len() },
		"deep topic":    func() { x.Match("eu.paris.bus.1.pos.a.b.c.d.e.f.g.h", func(int) bool { return true }) },
	} {
		if n := testing.AllocsPerRun(200, func() { read(); i++ }); n != 0 {
			t.Errorf("%s: %v allocations per call, want 0", name, n)
		}
	}
}
