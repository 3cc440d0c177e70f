package redistest

import (
	"os"
	"os/exec"
	"testing"
)

// Require fails t unless redis-server and redis-cli are installed; with
// GYRE_SKIP_REDIS=1 it skips t instead.
func Require(t testing.TB) {
	t.Helper()
	for _, bin := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv("GYRE_SKIP_REDIS") == "1" {
				t.Skipf("%s not installed and GYRE_SKIP_REDIS=1", bin)
			}
			t.Fatalf("%s not found: install it with scripts/install-redis (or apt-get install redis-server), or set GYRE_SKIP_REDIS=1 to skip Redis tests", bin)
		}
	}
}
