package sdksuite

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gyrehq/gyre/tests/sdk/go/internal/gyretest"
)

const (
	sdk = "github.com/centrifugal/centrifuge-go"
	// port is where the SDK's tests look for a server.
	port = 8000
)

// config is the configuration of the SDK's docker-compose.yml in Gyre's
// (Centrifugo v6) keys: centrifugo --client.insecure, delta compression,
// history and recovery in channels without a namespace, and the
// "smallhistory" namespace for positions that cannot be recovered.
func config() map[string]any {
	return map[string]any{
		"log":      map[string]any{"level": "info"},
		"client":   map[string]any{"insecure": true},
		"http_api": map[string]any{"insecure": true},
		"health":   map[string]any{"enabled": true},
		"channel": map[string]any{
			"without_namespace": map[string]any{
				"delta_publish":       true,
				"allowed_delta_types": []string{"fossil"},
				"history_size":        100,
				"history_ttl":         "300s",
				"force_recovery":      true,
			},
			"namespaces": []map[string]any{{
				"name":           "smallhistory",
				"force_recovery": true,
				"history_size":   2,
				"history_ttl":    "300s",
			}},
		},
	}
}

// TestCentrifugeGo runs the SDK's own tests against gyre, each as a subtest
// of its name.
func TestCentrifugeGo(t *testing.T) {
	portFree(t)
	s, err := gyretest.Start(gyretest.Options{Port: port, Config: config})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	defer func() {
		if t.Failed() {
			t.Logf("gyre log:\n%s", s.Log())
		}
	}()

	// The working directory is inside this module, so go test resolves the
	// SDK at the version of its go.mod, never a workspace's.
	version := goCommand(t, "list", "-m", "-f", "{{.Path}}@{{.Version}}", sdk)
	t.Logf("running the tests of %s against gyre on port %d", strings.TrimSpace(version), port)

	cmd := exec.Command("go", "test", "-count=1", "-json", "-timeout=5m", sdk)
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	tests, err := parseTestEvents(out)
	if err != nil {
		t.Fatalf("go test -json output: %v\n%s%s", err, out, stderr.Bytes())
	}
	failed := 0
	for _, tr := range tests {
		t.Run(tr.name, func(t *testing.T) {
			switch tr.action {
			case "pass":
			case "skip":
				t.Skipf("skipped by the SDK's suite:\n%s", tr.output)
			case "fail":
				failed++
				t.Errorf("failed against gyre:\n%s", tr.output)
			default:
				failed++
				t.Errorf("did not finish (%q):\n%s", tr.action, tr.output)
			}
		})
	}
	switch {
	case len(tests) == 0:
		t.Fatalf("the SDK's suite ran no test (%v):\n%s%s", runErr, packageOutput(out), stderr.Bytes())
	case runErr != nil && failed == 0:
		// A build failure, a panic outside a test or a timeout.
		t.Fatalf("go test %s: %v\n%s%s", sdk, runErr, packageOutput(out), stderr.Bytes())
	case runErr == nil && failed > 0:
		t.Fatalf("go test %s passed although %d tests failed", sdk, failed)
	}
	t.Logf("%d tests of the SDK's suite ran, %d failed", len(tests), failed)
}

// portFree fails the test unless nothing listens on localhost:8000 and the
// port can be bound: the SDK's tests would talk to whatever holds it.
func portFree(t *testing.T) {
	t.Helper()
	addrs, err := net.LookupHost("localhost")
	if err != nil {
		t.Fatalf("look up localhost: %v", err)
	}
	for _, a := range addrs {
		addr := net.JoinHostPort(a, fmt.Sprint(port))
		if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			conn.Close()
			t.Fatalf("port %d is taken: something listens on %s, and the SDK's own tests dial localhost:%d; stop it first", port, addr, port)
		}
	}
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatalf("port %d is taken (%v); the SDK's own tests dial localhost:%d; free it first", port, err, port)
	}
	ln.Close()
}

// goCommand runs the go command and returns its output.
func goCommand(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// testResult is how one top-level test of the SDK's suite ended, with its
// output (its subtests' included).
type testResult struct {
	name   string
	action string // pass, fail, skip; empty when it never ended
	output string
}

// testEvent is a line of go test -json (cmd/test2json).
type testEvent struct {
	Action string
	Test   string
	Output string
}

// parseTestEvents returns the top-level tests of a go test -json run in the
// order they started.
func parseTestEvents(out []byte) ([]*testResult, error) {
	var tests []*testResult
	byName := map[string]*testResult{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 || line[0] != '{' {
			continue
		}
		var ev testEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			return nil, fmt.Errorf("%w: %s", err, line)
		}
		if ev.Test == "" {
			continue
		}
		top, _, sub := strings.Cut(ev.Test, "/")
		tr := byName[top]
		if tr == nil {
			tr = &testResult{name: top}
			byName[top] = tr
			tests = append(tests, tr)
		}
		switch ev.Action {
		case "output":
			tr.output += ev.Output
		case "pass", "fail", "skip":
			if !sub {
				tr.action = ev.Action
			}
		}
	}
	return tests, sc.Err()
}

// packageOutput returns the output lines of a go test -json run that belong
// to no test: build errors, a panic, the final status.
func packageOutput(out []byte) string {
	var b strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		var ev testEvent
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			b.WriteString(sc.Text() + "\n")
			continue
		}
		if ev.Test == "" {
			b.WriteString(ev.Output)
		}
	}
	return b.String()
}
