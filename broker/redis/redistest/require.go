package redistest

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// Require fails t unless redis-server and redis-cli are installed; with
// GYRE_SKIP_REDIS=1 it skips t instead.
func Require(t testing.TB) {
	t.Helper()
	if err := Installed(); err != nil {
		if os.Getenv("GYRE_SKIP_REDIS") == "1" {
			t.Skipf("%v and GYRE_SKIP_REDIS=1", err)
		}
		t.Fatalf("%v: install it with scripts/install-redis (or apt-get install redis-server), or set GYRE_SKIP_REDIS=1 to skip Redis tests", err)
	}
}

// Installed tells whether redis-server and redis-cli are on the PATH.
func Installed() error {
	for _, bin := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("%s not installed", bin)
		}
	}
	return nil
}
