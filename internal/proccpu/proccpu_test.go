package proccpu

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
	if got := Seconds(os.Getpid()); got <= 0 {
		t.Fatalf("Seconds(self) = %v, want > 0", got)
	}
	if got := Seconds(-1); got != -1 {
		t.Fatalf("Seconds(-1) = %v, want -1", got)
	}
}

func TestPIDListSet(t *testing.T) {
	var l PIDList
	if err := l.Set("gyre=42"); err != nil || len(l) != 1 || l[0] != (namedPID{"gyre", 42}) {
		t.Fatalf("Set(gyre=42): %v, %v", l, err)
	}
	for _, bad := range []string{"42", "gyre=x"} {
		if err := l.Set(bad); err == nil {
			t.Errorf("Set(%q) took it", bad)
		}
	}
}
