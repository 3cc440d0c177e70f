package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gyrehq/gyre/internal/condwait"
)

// binary is the gyre command built once for all tests.
var binary string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "gyre-cmd-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "gyre")
	args := []string{"build", "-o", binary}
	if raceEnabled {
		// The server runs under the race detector too, so that a race
		// in it fails these tests (see proc.checkRaces).
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build gyre:", err)
		return 1
	}
	return m.Run()
}

// cleanEnv is the test's environment without GYRE_ and CENTRIFUGO_
// variables, plus extra.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GYRE_") && !strings.HasPrefix(kv, "CENTRIFUGO_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// runTool runs the binary to completion and returns its exit code and
// output.
func runTool(t *testing.T, dir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runToolEnv(t, dir, nil, args...)
}

// runToolEnv is runTool with env added to the clean environment.
func runToolEnv(t *testing.T, dir string, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = cleanEnv(env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run %v: %v", args, err)
	}
	return code, out.String(), errOut.String()
}

// proc is a running gyre server.
type proc struct {
	t    *testing.T
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // of Wait, once done

	mu     sync.Mutex
	cond   *sync.Cond
	exited bool
	logs   []map[string]any
	stderr bytes.Buffer
	stdout bytes.Buffer
}

// start runs the server with args and env (added to a clean environment)
// and waits until it listens.
func start(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	p := startNoWait(t, env, args...)
	p.waitLog("listening", nil)
	return p
}

func startNoWait(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = cleanEnv(env...)
	cmd.Dir = t.TempDir()
	p := &proc{t: t, cmd: cmd, done: make(chan struct{})}
	p.cond = sync.NewCond(&p.mu)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = stdoutWriter{p}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logsRead := make(chan struct{})
	go p.readLogs(stderr, logsRead)
	go func() {
		<-logsRead
		err := cmd.Wait()
		p.mu.Lock()
		p.err = err
		p.exited = true
		p.cond.Broadcast()
		p.mu.Unlock()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
		p.checkRaces()
	})
	return p
}

// stdoutWriter keeps the server's standard output and wakes waiters.
type stdoutWriter struct{ p *proc }

func (w stdoutWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	w.p.cond.Broadcast()
	return w.p.stdout.Write(b)
}

// readLogs keeps stderr, and each JSON log line decoded.
func (p *proc) readLogs(r io.Reader, done chan<- struct{}) {
	defer close(done)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var m map[string]any
		p.mu.Lock()
		p.stderr.Write(line)
		p.stderr.WriteByte('\n')
		if json.Unmarshal(line, &m) == nil {
			p.logs = append(p.logs, m)
		}
		p.cond.Broadcast()
		p.mu.Unlock()
	}
}

// waitLog waits for a log line with msg that match (if not nil) accepts,
// and returns it.
func (p *proc) waitLog(msg string, match func(map[string]any) bool) map[string]any {
	p.t.Helper()
	var found map[string]any
	p.waitFor("log "+msg, func() bool {
		for _, l := range p.logs {
			if l["msg"] == msg && (match == nil || match(l)) {
				found = l
				return true
			}
		}
		return false
	})
	return found
}

// waitFor waits until cond, called with p.mu held, holds; it fails when
// the process exits first or after a generous deadline.
func (p *proc) waitFor(what string, cond func() bool) {
	p.t.Helper()
	met, exited := false, false
	condwait.Until(p.cond, 20*time.Second, func() bool {
		met, exited = cond(), p.exited
		return met || exited
	})
	if met {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if exited {
		p.t.Fatalf("waiting for %s: gyre exited (%v); stderr:\n%s", what, p.err, p.stderr.String())
	}
	p.t.Fatalf("timed out waiting for %s; stderr:\n%s", what, p.stderr.String())
}

// addrs are the HTTP addresses the server listens on, in the order it
// logged them: the client port first, then the internal port if any.
func (p *proc) addrs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, l := range p.logs {
		if key, _ := l["listener"].(string); l["msg"] != "listening" || !strings.HasPrefix(key, "http_server.") {
			continue
		}
		a, _ := l["address"].(string)
		_, port, err := net.SplitHostPort(a)
		if err != nil {
			p.t.Fatalf("listening address %q: %v", a, err)
		}
		out = append(out, net.JoinHostPort("127.0.0.1", port))
	}
	return out
}

// url is the base URL of the client port.
func (p *proc) url() string { return "http://" + p.addrs()[0] }

func (p *proc) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("signal %v: %v", sig, err)
	}
}

// wait waits for the process to exit and returns its exit code; it fails
// if the process is still running after limit (a hang, not a slow run).
func (p *proc) wait(limit time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(limit):
		p.t.Fatalf("gyre still running after %v; stderr:\n%s", limit, p.stderrText())
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		p.t.Fatalf("wait: %v", p.err)
	}
	return 0
}

func (p *proc) stderrText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

func (p *proc) stdoutText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stdout.String()
}

// checkRaces fails the test when the race detector reported in the
// server.
func (p *proc) checkRaces() {
	if s := p.stderrText(); strings.Contains(s, "WARNING: DATA RACE") {
		p.t.Errorf("data race in gyre:\n%s", s)
	}
}

// writeFile writes a config file into a temp dir and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// freePort returns a port that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// apiCall posts body to the API method at base with key and decodes the
// reply's result into out (when not nil); it fails on an error reply.
func apiCall(t *testing.T, base, key, method, body string, out any) {
	t.Helper()
	status, b := httpPost(t, base+"/api/"+method, key, body)
	if status != http.StatusOK {
		t.Fatalf("%s: status %d: %s", method, status, b)
	}
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    uint32 `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: decode %q: %v", method, b, err)
	}
	if r.Error != nil {
		t.Fatalf("%s: error %d %s", method, r.Error.Code, r.Error.Message)
	}
	if out != nil {
		if err := json.Unmarshal(r.Result, out); err != nil {
			t.Fatalf("%s: decode result %q: %v", method, r.Result, err)
		}
	}
}

func httpPost(t *testing.T, url, key, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-API-Key", key)
	return doHTTP(t, req)
}

func httpGet(t *testing.T, url string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return doHTTP(t, req)
}

func doHTTP(t *testing.T, req *http.Request) (int, []byte) {
	t.Helper()
	client := &http.Client{Timeout: 20 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}
