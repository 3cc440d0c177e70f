package gyre

import (
	"testing"
	"time"
)

// TestLoadMeter: the rate is the publications between two measures over
// the time between them; memory is measured from the first.
func TestLoadMeter(t *testing.T) {
	var m loadMeter
	start := time.Now()
	m.measure(100)
	rate, mem := m.get()
	if rate != 0 || mem == 0 {
		t.Fatalf("first measure: rate %v, memory %d", rate, mem)
	}
	time.Sleep(20 * time.Millisecond)
	m.measure(150)
	elapsed := time.Since(start).Seconds()
	rate, _ = m.get()
	// 50 publications over at least 20ms and at most elapsed.
	if rate < 50/elapsed || rate > 50/0.02 {
		t.Fatalf("rate %v over %.3fs", rate, elapsed)
	}
}
