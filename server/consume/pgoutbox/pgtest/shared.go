package pgtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// EnvDSN names the environment variable with the DSN of a server that
// every test binary of a run shares (scripts/test starts it with
// scripts/start-postgres); without it each test binary starts its own.
const EnvDSN = "GYRE_TEST_POSTGRES_DSN"

// dirPrefix starts the names of the servers' temporary directories.
const dirPrefix = "gyre-pgtest-"

var shared struct {
	mu     sync.Mutex
	server *Server // nil until started, and with EnvDSN
	dsn    string
	err    error
}

// DSN returns the DSN of the server the test binary's tests share: that of
// EnvDSN when set, else of a server started at the first call, which Main
// stops (or the system kills when the test binary exits). Tests keep apart
// by names of their own (NewTable).
func DSN(t testing.TB) string {
	t.Helper()
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		return dsn
	}
	Require(t)
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.dsn == "" && shared.err == nil {
		sweep()
		shared.server, shared.err = startServer(false)
		if shared.err == nil {
			shared.dsn = shared.server.DSN
		}
	}
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.dsn
}

// Main runs the tests of m, then stops the server DSN started and removes
// its files. A test binary whose tests use DSN calls it from TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// Without it (a TestMain that must call another Main), the server still
// dies with the test binary, and the next test binary to start a server
// removes the directory left behind.
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

// Stop stops the server that DSN started, if any, and removes its files.
func Stop() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.server != nil {
		shared.server.remove()
		shared.server, shared.dsn = nil, ""
	}
}

// newDir makes the directory of a new server, named so that sweep finds
// it once this process is gone.
func newDir() (string, error) {
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return "", fmt.Errorf("pgtest: %w", err)
	}
	// The server may run as another user (postgres, when the tests run
	// as root), who must reach the directory.
	err = os.Chmod(dir, 0o755)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "owner"), []byte(strconv.Itoa(os.Getpid())), 0o644)
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("pgtest: %w", err)
	}
	return dir, nil
}

// sweep removes the directories of servers that test binaries left
// behind when they died without cleaning up: those whose test binary and
// server are both gone.
func sweep() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, dir := range dirs {
		// A directory just made may not name its owner yet.
		if fi, err := os.Stat(dir); err != nil || time.Since(fi.ModTime()) < time.Minute {
			continue
		}
		if alive(filepath.Join(dir, "owner")) || alive(filepath.Join(dir, "data", "postmaster.pid")) {
			continue
		}
		_ = os.RemoveAll(dir)
	}
}

// alive reports whether the process whose id starts the file is running;
// false when there is no such file.
func alive(pidFile string) bool {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		return false
	}
	err = syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
