package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// startTimeout bounds how long a server may take to answer, crash
// recovery included.
const startTimeout = 60 * time.Second

// Require fails t unless the PostgreSQL server binaries are installed;
// with GYRE_SKIP_POSTGRES=1 it skips t instead.
func Require(t testing.TB) {
	t.Helper()
	if _, err := binDir(); err != nil {
		if os.Getenv("GYRE_SKIP_POSTGRES") == "1" {
			t.Skipf("%v and GYRE_SKIP_POSTGRES=1", err)
		}
		t.Fatalf("%v: install it with scripts/install-postgres (or apt-get install postgresql), or set GYRE_SKIP_POSTGRES=1 to skip the PostgreSQL tests", err)
	}
}

// binDir finds the directory of postgres and initdb: Debian's, of the
// newest version installed, else the PATH's.
func binDir() (string, error) {
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	sort.Slice(found, func(i, j int) bool { return version(found[i]) < version(found[j]) })
	if len(found) > 0 {
		return filepath.Dir(found[len(found)-1]), nil
	}
	if p, err := exec.LookPath("postgres"); err == nil {
		if _, err := exec.LookPath("initdb"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	return "", errors.New("PostgreSQL server (postgres, initdb) not installed")
}

// version is the major version in a path /usr/lib/postgresql/N/bin/postgres.
func version(path string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(path))))
	return n
}

// Server is one PostgreSQL server process, listening on a loopback port,
// with trust authentication and without syncing to disk: fast, and lost
// with the machine, as tests want. Its methods are safe for concurrent
// use.
type Server struct {
	// DSN connects to the database postgres as the user postgres.
	DSN  string
	Port int
	// Dir holds the cluster (Dir/data), the socket directory and the log.
	Dir string

	bin string
	// durable keeps what was committed through a kill of the server:
	// commits wait for their WAL to be written (not synced: the kill is
	// of the process, not of the machine).
	durable bool
	// cred runs the server as the postgres user when the tests run as
	// root: PostgreSQL refuses to run as root.
	cred *syscall.Credential

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// Start runs a server of the test's own, for tests that stop it (Kill,
// Outage); it is killed and its files removed when the test ends. Unlike
// the shared server's, its commits survive Kill.
func Start(t testing.TB) *Server {
	t.Helper()
	Require(t)
	s, err := startServer(true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.remove)
	return s
}

// startServer makes a cluster in a new temporary directory and starts a
// server on it, on a free port; durable for a server that is killed. The
// caller removes it.
func startServer(durable bool) (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := newDir()
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: dir, bin: bin, durable: durable}
	if err := s.init(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	// A port found free may be taken before the server binds it: try
	// another then.
	for range 5 {
		if s.Port, err = freePort(); err != nil {
			break
		}
		s.DSN = "postgres://postgres@127.0.0.1:" + strconv.Itoa(s.Port) + "/postgres?sslmode=disable"
		if err = s.Restart(); err == nil {
			return s, nil
		}
	}
	_ = os.RemoveAll(dir)
	return nil, err
}

// init creates the cluster, owned by the user that runs the server.
func (s *Server) init() error {
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return fmt.Errorf("pgtest: running as root, and no postgres user to run PostgreSQL as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(s.Dir, uid, gid); err != nil {
			return fmt.Errorf("pgtest: %w", err)
		}
	}
	cmd := exec.Command(filepath.Join(s.bin, "initdb"), "-D", filepath.Join(s.Dir, "data"),
		"-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgtest: initdb in %s: %w: %s", s.Dir, err, out)
	}
	return nil
}

// readyDSN is the DSN that tells whether this server answers: through
// its own socket, when it has one, since the TCP port could be another
// server's that took it first.
func (s *Server) readyDSN() string {
	if sock := s.sockDir(); sock != "" {
		return "postgres://postgres@/postgres?sslmode=disable&host=" + sock + "&port=" + strconv.Itoa(s.Port)
	}
	return s.DSN
}

// sockDir is the directory of the server's Unix socket; empty when its
// path would be too long for a socket's.
func (s *Server) sockDir() string {
	sock := filepath.Join(s.Dir, "sock")
	if len(sock)+len("/.s.PGSQL.65535") > 107 {
		return ""
	}
	return sock
}

// args are the server's arguments: the settings of a throw-away server.
func (s *Server) args() []string {
	syncCommit := "off"
	if s.durable {
		syncCommit = "on"
	}
	return []string{
		"-D", filepath.Join(s.Dir, "data"),
		"-p", strconv.Itoa(s.Port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=" + s.sockDir(),
		"-c", "fsync=off",
		"-c", "synchronous_commit=" + syncCommit,
		"-c", "full_page_writes=off",
		"-c", "max_connections=300",
	}
}

// Restart starts the server after Kill, on the same port and data
// directory, and waits until it answers (after recovering from the kill).
// It is how Start and startServer start it the first time, too.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return fmt.Errorf("pgtest: server on port %d already running", s.Port)
	}
	if err := os.MkdirAll(filepath.Join(s.Dir, "sock"), 0o755); err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	if s.cred != nil {
		_ = os.Chown(filepath.Join(s.Dir, "sock"), int(s.cred.Uid), int(s.cred.Gid))
	}
	log, err := os.OpenFile(filepath.Join(s.Dir, "postgres.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer log.Close()
	cmd := exec.Command(filepath.Join(s.bin, "postgres"), s.args()...)
	cmd.Stdout, cmd.Stderr = log, log
	// The system kills the server should the test binary die first (a
	// panic or -timeout skips every cleanup).
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	s.cmd, s.done = cmd, done
	deadline := time.Now().Add(startTimeout)
	for {
		err := ping(s.readyDSN())
		if err == nil {
			return nil
		}
		select {
		case <-done:
			s.cmd, s.done = nil, nil
			return fmt.Errorf("pgtest: postgres on port %d exited at start; log: %s", s.Port, s.tailLog())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stopLocked()
			return fmt.Errorf("pgtest: postgres on port %d did not answer: %v; log: %s", s.Port, err, s.tailLog())
		}
	}
}

// Kill stops the server at once (an immediate shutdown: no checkpoint,
// clients cut off, recovery at the next start, as after a crash) and waits
// until it has exited. Killing a stopped server does nothing.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked()
}

func (s *Server) stopLocked() {
	if s.cmd == nil {
		return
	}
	// SIGQUIT is pg_ctl stop -m immediate: the postmaster has its
	// children quit and exits. SIGKILL to the postmaster alone would
	// leave them running, holding the port and shared memory.
	_ = s.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-s.done:
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd, s.done = nil, nil
}

// WriteFile writes a file into the cluster's data directory, readable by
// the server alone (as PostgreSQL wants of a TLS key): server.crt and
// server.key, say, before turning ssl on with ALTER SYSTEM and a reload.
func (s *Server) WriteFile(t testing.TB, name string, data []byte) {
	t.Helper()
	path := filepath.Join(s.Dir, "data", name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	if s.cred != nil {
		if err := os.Chown(path, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			t.Fatalf("pgtest: %v", err)
		}
	}
}

// Running reports whether the server process is alive.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

// Outage kills the server, waits d, starts it again on the same port and
// data directory and waits until it answers.
func (s *Server) Outage(t testing.TB, d time.Duration) {
	t.Helper()
	s.Kill()
	time.Sleep(d)
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
}

// remove kills the server and removes its files.
func (s *Server) remove() {
	s.Kill()
	_ = os.RemoveAll(s.Dir)
}

func (s *Server) tailLog() string {
	b, err := os.ReadFile(filepath.Join(s.Dir, "postgres.log"))
	if err != nil {
		return "(no log)"
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// ping connects to dsn and runs a query.
func ping(dsn string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.Ping(ctx)
}

// freePort returns a loopback port nobody listens on.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
