package gyreproc

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	// startLimit bounds how long a node may take to become healthy; a
	// race-enabled binary on a loaded machine is slow to start.
	startLimit = 60 * time.Second
	// stopLimit bounds a clean shutdown; past it the node is taken for
	// hung, which fails the test.
	stopLimit = 30 * time.Second
)

// hiddenEnv are the prefixes of the variables a node does not inherit
// from the test: each would change its configuration (GYRE_, CENTRIFUGO_)
// or its OpenTelemetry export (OTEL_), which the test sets itself.
var hiddenEnv = []string{"GYRE_", "CENTRIFUGO_", "OTEL_"}

// healthHTTP asks a starting node whether it is healthy.
var healthHTTP = &http.Client{Timeout: 5 * time.Second}

// Node is one running gyre process. Name and Base are for the test to
// read.
type Node struct {
	Name string
	Base string // http://127.0.0.1:port

	t       testing.TB
	apiKey  string // http_api.key of its configuration
	logPath string // its standard output and error
	cmd     *exec.Cmd
	done    chan struct{} // closed once the process has exited
	waitErr error         // of the process, once done is closed
}

// Start runs a node named name on cfg as TryStart does, trying again on
// other ports when the free port it chose was taken before gyre bound it,
// and fails the test when the node does not come up.
func Start(t testing.TB, name string, cfg Config, env ...string) *Node {
	t.Helper()
	for attempt := 1; ; attempt++ {
		n, err := TryStart(t, name, cfg, env...)
		if err == nil {
			return n
		}
		// The free port can be taken by someone else before gyre binds.
		if attempt < 3 && strings.Contains(err.Error(), "address already in use") {
			continue
		}
		t.Fatalf("start node %s: %v", name, err)
	}
}

// TryStart sets http_server.port of cfg to a free port, writes cfg into a
// directory of the test and runs gyre on it, in the test's environment
// without the variables that would configure it and with env (KEY=value)
// added, until the node answers /health. When the test ends the node is
// stopped, a data race it reported fails the test, and the end of its log
// is shown if the test failed.
func TryStart(t testing.TB, name string, cfg Config, env ...string) (*Node, error) {
	if binary == "" {
		return nil, errNoBinary
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cfg.Set("http_server.port", port)
	dir := t.TempDir()
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("gyreproc: encode config: %w", err)
	}
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		return nil, fmt.Errorf("gyreproc: %w", err)
	}
	logPath := filepath.Join(dir, "gyre.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("gyreproc: %w", err)
	}
	defer logFile.Close()
	cmd := exec.Command(binary, "-c", cfgPath)
	cmd.Dir = dir
	cmd.Env = append(inheritedEnv(os.Environ()), env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("gyreproc: run gyre: %w", err)
	}
	key, _ := cfg.get("http_api.key").(string)
	n := &Node{
		Name:    name,
		Base:    "http://127.0.0.1:" + strconv.Itoa(port),
		t:       t,
		apiKey:  key,
		logPath: logPath,
		cmd:     cmd,
		done:    make(chan struct{}),
	}
	go func() {
		n.waitErr = cmd.Wait()
		close(n.done)
	}()
	if err := n.waitHealthy(); err != nil {
		n.Kill()
		return nil, err
	}
	t.Cleanup(func() {
		n.Stop()
		n.checkRaces()
		if t.Failed() {
			t.Logf("log of node %s (%s):\n%s", n.Name, n.Base, n.tailLog(6000))
		}
	})
	return n, nil
}

// inheritedEnv is environ without the variables of hiddenEnv.
func inheritedEnv(environ []string) []string {
	var env []string
next:
	for _, kv := range environ {
		for _, p := range hiddenEnv {
			if strings.HasPrefix(kv, p) {
				continue next
			}
		}
		env = append(env, kv)
	}
	return env
}

func (n *Node) waitHealthy() error {
	deadline := time.Now().Add(startLimit)
	for {
		select {
		case <-n.done:
			return fmt.Errorf("gyreproc: gyre exited at start (%v): %s", n.waitErr, n.tailLog(3000))
		default:
		}
		resp, err := healthHTTP.Get(n.Base + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("gyreproc: gyre not healthy within %v: %s", startLimit, n.tailLog(3000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WSURL is the node's WebSocket endpoint of the client protocol.
func (n *Node) WSURL() string {
	return "ws" + strings.TrimPrefix(n.Base, "http") + "/connection/websocket"
}

// Kill ends the process with SIGKILL, as a crash would, and waits for it.
func (n *Node) Kill() {
	_ = n.cmd.Process.Kill()
	<-n.done
}

// Stop ends the process with SIGTERM, a clean shutdown, and waits for it;
// a node still running stopLimit later fails the test and is killed.
// Stopping a node that has exited does nothing. The test's cleanup stops
// every node; a test calls Stop itself to see what follows a shutdown.
func (n *Node) Stop() {
	select {
	case <-n.done:
		return
	default:
	}
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.done:
	case <-time.After(stopLimit):
		n.t.Errorf("node %s still running %v after SIGTERM", n.Name, stopLimit)
		// SIGQUIT makes the Go runtime write every goroutine's stack to
		// the node's log, which the failure report shows.
		_ = n.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-n.done:
		case <-time.After(5 * time.Second):
			n.Kill()
		}
	}
}

// Log is what the node has written to its standard output and error.
func (n *Node) Log() string {
	b, _ := os.ReadFile(n.logPath)
	return string(b)
}

// tailLog is the last max bytes of the log, for failure reports.
func (n *Node) tailLog(max int) string {
	s := n.Log()
	if len(s) > max {
		s = "..." + s[len(s)-max:]
	}
	return s
}

// checkRaces fails the test when the race detector reported in the node:
// the race is the server's, so no assertion of the test would see it.
func (n *Node) checkRaces() {
	if s := n.Log(); strings.Contains(s, "WARNING: DATA RACE") {
		n.t.Errorf("data race in node %s:\n%s", n.Name, s)
	}
}

// freePort returns a loopback port that was free a moment ago; Start
// tries again when someone else takes it before gyre binds.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("gyreproc: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
