package loadtest

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps keeps the load tool independent of the server it measures:
// it speaks the wire protocol through package protocol (and signs tokens
// with package token) and must not reach into Gyre's engine or server,
// so that it measures Gyre and Centrifugo alike.
func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	const mod = "github.com/gyrehq/gyre"
	bannedTrees := []string{mod + "/server", mod + "/transport", mod + "/broker"}
	for _, dep := range strings.Fields(string(out)) {
		if dep == mod {
			t.Errorf("loadtest imports the engine, %s", dep)
		}
		for _, b := range bannedTrees {
			if dep == b || strings.HasPrefix(dep, b+"/") {
				t.Errorf("loadtest imports %s", dep)
			}
		}
	}
}
