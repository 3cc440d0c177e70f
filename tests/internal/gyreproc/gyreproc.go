// Package gyreproc runs real gyre processes for the end-to-end tests
// (tests/cluster, tests/otel): it builds the gyre command once per test
// binary, starts nodes on a configuration written as nested maps, waits
// until they are healthy, calls their server HTTP API, and stops them when
// the test ends, failing the test on a data race a node reports.
//
// TestMain calls Build before the tests run; Start then runs a node of
// that binary for one test.
package gyreproc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// binary is the gyre command nodes run, set once by Build.
var binary string

// Build provides the gyre command that Start runs: the binary GYRE_BIN
// names (one built elsewhere: another commit, another build mode), else
// cmd/gyre built into dir. Under the race detector the command is built
// with it too, so that a race inside a node fails the test that provoked
// it. Building takes a while, which is why TestMain does it once for every
// test of the binary.
func Build(dir string) error {
	if bin := os.Getenv("GYRE_BIN"); bin != "" {
		binary = bin
		return nil
	}
	out := filepath.Join(dir, "gyre")
	args := []string{"build", "-o", out}
	if raceDetector {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "github.com/gyrehq/gyre/cmd/gyre")...)
	// The compiler's messages go where the test binary's own output goes.
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("gyreproc: build gyre: %w", err)
	}
	binary = out
	return nil
}

// errNoBinary is Start without Build.
var errNoBinary = errors.New("gyreproc: no gyre binary: TestMain must call Build")
