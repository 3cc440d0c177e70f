package redis

import (
	"testing"
	"time"
)

// TestBackoffBounds: whatever the number of failed attempts, the wait
// before the next one stays within a quarter of a second, so that the
// pub/sub connection comes back soon after Redis does; after a few failed
// attempts it is at least a tenth of a second, so that a Redis that stays
// down is not tried in a tight loop; after a connection that was up for a
// while it starts small again, so that a dropped connection to a live
// Redis is replaced at once, but not after one that dropped right away
// (a connection that flaps does not reconnect in a tight loop either).
func TestBackoffBounds(t *testing.T) {
	const (
		ceiling = 250 * time.Millisecond
		floor   = 100 * time.Millisecond
		first   = 25 * time.Millisecond
	)
	var b backoff
	for round := range 50 {
		if w := b.after(time.Minute); w > first {
			t.Fatalf("round %d: first wait after a long-lived connection %v, want at most %v", round, w, first)
		}
		for i := range 100 {
			w := b.after(0)
			if w > ceiling {
				t.Fatalf("round %d, attempt %d: wait %v, want at most %v", round, i, w, ceiling)
			}
			if i >= 4 && w < floor {
				t.Fatalf("round %d, attempt %d: wait %v, want at least %v", round, i, w, floor)
			}
		}
		// A connection that dropped as soon as it was up does not
		// start the waits over.
		if w := b.after(time.Millisecond); w < floor || w > ceiling {
			t.Fatalf("round %d: wait after a connection that flapped %v, want %v to %v", round, w, floor, ceiling)
		}
	}
}
