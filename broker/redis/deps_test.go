package redis

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencies keeps the layering: a broker knows the contracts and
// the protocol's types, never the engine or the server above it.
func TestDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		switch {
		case dep == "github.com/gyrehq/gyre",
			strings.HasPrefix(dep, "github.com/gyrehq/gyre/server"),
			strings.HasPrefix(dep, "github.com/gyrehq/gyre/transport"),
			strings.HasPrefix(dep, "github.com/gyrehq/gyre/broker/memory"):
			t.Errorf("broker/redis depends on %s", dep)
		}
	}
}
