package natstest

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gyrehq/gyre/internal/testproc"
)

// Require fails t unless nats-server is installed; with GYRE_SKIP_NATS=1
// it skips t instead.
func Require(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("nats-server"); err != nil {
		if os.Getenv("GYRE_SKIP_NATS") == "1" {
			t.Skip("nats-server not installed and GYRE_SKIP_NATS=1")
		}
		t.Fatal("nats-server not found: install it with scripts/install-nats (or apt-get install nats-server), or set GYRE_SKIP_NATS=1 to skip NATS tests")
	}
}

// Server is one nats-server process. Its methods are safe for concurrent
// use: Kill, Stop, Pause, Resume and Running are testproc.Proc's.
type Server struct {
	// URL is nats://host:port of the server; Addr is host:port.
	URL  string
	Addr string
	Port int
	// Dir holds the server's log and JetStream store.
	Dir string

	*testproc.Proc
}

// Start runs nats-server with JetStream on a free port, with extra
// arguments as on its command line, and waits until it greets a client.
// The process is killed when the test ends.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	Require(t)
	s, err := StartDir(t.TempDir(), args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Kill)
	return s
}

// StartDir is Start for callers without a testing.TB (a package's
// TestMain sharing one server between its tests): the server keeps its
// files in dir and runs until Kill or Stop.
func StartDir(dir string, args ...string) (*Server, error) {
	if _, err := exec.LookPath("nats-server"); err != nil {
		return nil, fmt.Errorf("natstest: nats-server not found: install it with scripts/install-nats: %w", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	full := append([]string{
		"-a", "127.0.0.1", "-p", strconv.Itoa(port),
		"-js", "-sd", filepath.Join(dir, "jetstream"),
		"-l", filepath.Join(dir, "nats.log"),
	}, args...)
	s := &Server{URL: "nats://" + addr, Addr: addr, Port: port, Dir: dir}
	s.Proc = &testproc.Proc{
		Name: "nats-server", Args: full, Addr: addr, DieWithParent: true,
		Ready: func() error { return greet(addr) }, Log: s.tailLog,
	}
	if err := s.Start(); err != nil {
		return nil, err
	}
	return s, nil
}

// greet connects to addr and reads the server's INFO line: the server
// accepts clients once it sends it.
func greet(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "INFO ") {
		return errors.New("natstest: no INFO from " + addr)
	}
	return nil
}

// Restart starts a stopped or killed server again on the same port with
// the same arguments and the same JetStream store.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
}

func (s *Server) tailLog() string {
	b, err := os.ReadFile(filepath.Join(s.Dir, "nats.log"))
	if err != nil {
		return "(no log)"
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// freePort returns a loopback port nobody listens on.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("natstest: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
