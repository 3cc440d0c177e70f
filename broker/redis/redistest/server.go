package redistest

import (
	"bufio"
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

// startTimeout bounds how long a process may take to answer PING.
const startTimeout = testproc.StartTimeout

// Server is one redis-server (or sentinel) process on a loopback port. Its
// methods are safe for concurrent use: Kill, Stop, Pause, Resume and
// Running are testproc.Proc's.
type Server struct {
	// Addr is host:port of the server.
	Addr string
	Port int
	// Dir is the working directory of the process (logs, config).
	Dir string

	t testing.TB // nil for a server of StartShared
	*testproc.Proc
}

// Start runs redis-server on a free port with extra arguments (as on its
// command line, e.g. "--maxmemory", "10mb") and waits until it answers.
// The process is killed when the test ends.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	Require(t)
	port, err := freePort(false)
	if err != nil {
		t.Fatal(err)
	}
	return startOn(t, port, "", args...)
}

// startOn starts redis-server on port without persistence; conf, when
// set, is a config file written into the server's directory.
func startOn(t testing.TB, port int, conf string, args ...string) *Server {
	t.Helper()
	return startProcess(t, port, conf, redisArgs(args))
}

// redisArgs are the arguments of a server without persistence, keeping
// its files in dir, followed by args.
func redisArgs(args []string) func(dir string) []string {
	return func(dir string) []string {
		return append([]string{
			"--dir", dir,
			"--save", "",
			"--appendonly", "no",
		}, args...)
	}
}

// startProcess starts redis-server on port with the arguments extra
// returns for the process's directory, killed when t ends.
func startProcess(t testing.TB, port int, conf string, extra func(dir string) []string) *Server {
	t.Helper()
	s, err := launch(t.TempDir(), port, conf, extra, false)
	if err != nil {
		t.Fatal(err)
	}
	s.t = t
	t.Cleanup(s.Kill)
	return s
}

// launch starts redis-server on port in dir and waits until it answers.
// The caller kills it; with orphanKill, the system kills it too should the
// test binary die first (a panic or -timeout skips every cleanup).
func launch(dir string, port int, conf string, extra func(dir string) []string, orphanKill bool) (*Server, error) {
	var full []string
	if conf != "" {
		path := filepath.Join(dir, "redis.conf")
		if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
			return nil, fmt.Errorf("redistest: write config: %w", err)
		}
		full = append(full, path)
	}
	full = append(full,
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--protected-mode", "no",
		"--logfile", filepath.Join(dir, "redis.log"),
	)
	full = append(full, extra(dir)...)
	s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), Port: port, Dir: dir}
	s.Proc = &testproc.Proc{
		Name: "redis-server", Args: full, Addr: s.Addr, DieWithParent: orphanKill,
		Ready: func() error { return ping(s.Addr) }, Log: s.tailLog,
	}
	if err := s.start(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Server) start() error { return s.Proc.Start() }

// Restart starts a stopped or killed server again on the same port with
// the same arguments; its data is gone (persistence is off). A server of
// StartShared, having no test to fail, panics if it cannot.
func (s *Server) Restart() {
	err := s.start()
	switch {
	case err == nil:
	case s.t != nil:
		s.t.Helper()
		s.t.Fatal(err)
	default:
		panic(err)
	}
}

// Cli runs redis-cli against the server with args and returns its trimmed
// output.
func (s *Server) Cli(args ...string) (string, error) {
	return cli(s.Port, args...)
}

// CPUSeconds is the CPU time the server has used so far, user and
// system (INFO cpu), for benchmarks that count what Redis spends.
func (s *Server) CPUSeconds() (float64, error) {
	out, err := s.Cli("info", "cpu")
	if err != nil {
		return 0, err
	}
	var total float64
	for line := range strings.Lines(out) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, fmt.Errorf("redistest: INFO cpu %q: %w", line, err)
			}
			total += f
		}
	}
	return total, nil
}

func cli(port int, args ...string) (string, error) {
	full := append([]string{"-h", "127.0.0.1", "-p", strconv.Itoa(port)}, args...)
	out, err := exec.Command("redis-cli", full...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("redistest: redis-cli %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

func (s *Server) tailLog() string {
	b, err := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
	if err != nil {
		return "(no log)"
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// ping sends one inline PING and expects PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("redistest: PING answered %q", strings.TrimSpace(line))
	}
	return nil
}
