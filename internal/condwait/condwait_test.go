package condwait

import (
	"sync"
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	var mu sync.Mutex
	c := sync.NewCond(&mu)
	n := 0
	go func() {
		for range 3 {
			time.Sleep(time.Millisecond)
			mu.Lock()
			n++
			c.Broadcast()
			mu.Unlock()
		}
	}()
	if !Until(c, time.Minute, func() bool { return n == 3 }) {
		t.Fatal("Until gave up before the condition held")
	}
	if Until(c, 10*time.Millisecond, func() bool { return n == 4 }) {
		t.Fatal("Until reported a condition that never held")
	}
	// The lock is free again after either outcome.
	mu.Lock()
	mu.Unlock()
}
