package cluster_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// gyreBinary is the gyre command, built once for every test of the
// package.
var gyreBinary string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if bin := os.Getenv("GYRE_BIN"); bin != "" {
		// A binary built elsewhere, e.g. from another commit.
		gyreBinary = bin
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "gyre-cluster-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	gyreBinary = filepath.Join(dir, "gyre")
	args := []string{"build", "-o", gyreBinary}
	if raceEnabled {
		// A race inside the server fails the test that provoked it
		// (see gyreNode.checkRaces).
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "github.com/gyrehq/gyre/cmd/gyre")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build gyre:", err)
		return 1
	}
	return m.Run()
}
