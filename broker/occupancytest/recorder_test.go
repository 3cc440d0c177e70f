package occupancytest

import (
	"testing"

	"github.com/gyrehq/gyre/broker"
)

func TestAlternates(t *testing.T) {
	ev := func(occupied bool, ms int64) arrival {
		return arrival{OccupancyEvent: broker.OccupancyEvent{Occupied: occupied, TimeMs: ms}}
	}
	for _, c := range []struct {
		name string
		seq  []arrival
		ok   bool
	}{
		{"none", nil, true},
		{"pairs", []arrival{ev(true, 1), ev(false, 2), ev(true, 2), ev(false, 5)}, true},
		{"held", []arrival{ev(true, 1), ev(false, 2), ev(true, 3)}, true},
		{"starts vacated", []arrival{ev(false, 1)}, false},
		{"occupied twice", []arrival{ev(true, 1), ev(true, 2)}, false},
		{"vacated twice", []arrival{ev(true, 1), ev(false, 2), ev(false, 3)}, false},
		{"back in time", []arrival{ev(true, 5), ev(false, 4)}, false},
	} {
		if err := alternates(c.seq); (err == nil) != c.ok {
			t.Errorf("%s: %v, want ok %v", c.name, err, c.ok)
		}
	}
}
