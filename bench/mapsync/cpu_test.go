package main

import (
	"os"
	"testing"
)

func TestCPUSecondsOfItself(t *testing.T) {
	// Burn a little CPU so that the reading cannot be zero by chance of
	// a parse that returns 0.
	x := 0
	for i := range 50_000_000 {
		x += i % 7
	}
	_ = x
	if got := cpuSeconds(os.Getpid()); got <= 0 {
		t.Fatalf("cpuSeconds(self) = %v, want > 0", got)
	}
	if got := cpuSeconds(-1); got != -1 {
		t.Fatalf("cpuSeconds(-1) = %v, want -1", got)
	}
}

func TestPIDListSet(t *testing.T) {
	var l pidList
	if err := l.Set("gyre=42"); err != nil || len(l) != 1 || l[0] != (namedPID{"gyre", 42}) {
		t.Fatalf("Set(gyre=42): %v, %v", l, err)
	}
	for _, bad := range []string{"42", "gyre=x"} {
		if err := l.Set(bad); err == nil {
			t.Errorf("Set(%q) took it", bad)
		}
	}
}
