package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gyrehq/gyre/loadtest"
)

// TestBench runs every scenario of gyre bench, small, against a real
// gyre: the tool must connect everything, and nothing published may be
// lost or reordered.
func TestBench(t *testing.T) {
	t.Parallel()
	path := writeFile(t, "config.json", centrifugoConfig)
	p := start(t, nil, "-c", path, "--http_server.port", "0")
	base := p.url()
	common := []string{
		"--url", "ws" + strings.TrimPrefix(base, "http") + "/connection/websocket",
		"--api", base + "/api", "--api-key", testAPIKey, "--hmac-secret", testSecret,
		"--conns", "20", "--duration", "1s", "--pid", strconv.Itoa(p.cmd.Process.Pid), "--json",
	}
	tests := []struct {
		name string
		args []string
	}{
		{"idle", []string{"idle", "--subs", "3"}},
		{"fanout", []string{"fanout"}},
		{"fanout protobuf batch", []string{"fanout", "--protocol", "protobuf", "--batch", "5", "--size", "512"}},
		{"fanout procs", []string{"fanout", "--procs", "2", "--publishers", "2", "--rate", "200"}},
		{"fanout compression json", []string{"fanout", "--compression", "--payload", "json", "--size", "1024", "--seed", "7"}},
		{"channels", []string{"channels"}},
		{"connect", []string{"connect", "--procs", "2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"bench"}, tt.args...)
			args = append(args, common...)
			args = append(args, "--channel", strings.ReplaceAll(tt.name, " ", "-"))
			code, stdout, stderr := runTool(t, t.TempDir(), args...)
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			var res loadtest.Result
			if err := json.Unmarshal([]byte(stdout), &res); err != nil {
				t.Fatalf("summary %q: %v", stdout, err)
			}
			checkBench(t, &res)
			compress := strings.Contains(tt.name, "compression")
			if r := res.Received; r.Compression != compress || (r.NegotiatedBy != "") != compress || r.WireBytes == 0 {
				t.Fatalf("received %+v: compression offered %v", r, compress)
			}
			if strings.Contains(tt.name, "json") && res.Publish.Payload != loadtest.PayloadJSON {
				t.Fatalf("publish %+v: want the json payload", res.Publish)
			}
		})
	}
	// Without --json the summary is a table; --cpuprofile writes a
	// profile (gzip-compressed protobuf) of the run.
	dir := t.TempDir()
	prof := filepath.Join(dir, "cpu.prof")
	code, stdout, stderr := runTool(t, dir, append([]string{"bench", "fanout", "--cpuprofile", prof}, common[:len(common)-1]...)...)
	if code != 0 || !strings.Contains(stdout, "deliveries") || !strings.Contains(stdout, "out of order") {
		t.Fatalf("table run: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if b, err := os.ReadFile(prof); err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("cpu profile: %d bytes, %v; want a gzip stream", len(b), err)
	}
}

func checkBench(t *testing.T, res *loadtest.Result) {
	t.Helper()
	c := res.Connections
	if c.Opened != 20 || c.Failed != 0 || c.Dropped != 0 || len(res.Errors) != 0 {
		t.Fatalf("connections %+v, errors %v: want 20 opened, nothing failed", c, res.Errors)
	}
	if res.Server == nil || res.Server.RSSEnd == 0 {
		t.Fatalf("no server memory: %+v", res.Server)
	}
	if res.Publish == nil {
		return
	}
	d := res.Delivery
	want := int64(res.Publish.Publications) * 20
	if res.Publish.Publications == 0 || res.Publish.Errors != 0 {
		t.Fatalf("publish %+v", res.Publish)
	}
	if d.Received != want || d.Expected != want || d.Lost != 0 || d.OutOfOrder != 0 {
		t.Fatalf("delivery %+v: want all %d, once, in order", d, want)
	}
}

// TestBenchChurn churns over two gyre processes, in the chat namespace
// (presence and join/leave pushes on): every connect must end in a
// disconnect, every connection subscribe, and both nodes take their
// share, with their CPU read by process id.
func TestBenchChurn(t *testing.T) {
	t.Parallel()
	path := writeFile(t, "config.json", centrifugoConfig)
	nodes := []*proc{
		start(t, nil, "-c", path, "--http_server.port", "0"),
		start(t, nil, "-c", path, "--http_server.port", "0"),
	}
	var urls []string
	for _, p := range nodes {
		urls = append(urls, "ws"+strings.TrimPrefix(p.url(), "http")+"/connection/websocket")
	}
	pids := strconv.Itoa(nodes[0].cmd.Process.Pid) + "," + strconv.Itoa(nodes[1].cmd.Process.Pid)
	common := []string{"bench", "churn", "--hmac-secret", testSecret, "--conns", "20", "--users", "5", "--channels", "3",
		"--channel", "chat:room", "--hold", "100ms", "--duration", "1s"}
	tests := []struct {
		name  string
		args  []string
		nodes int
	}{
		{"two nodes unsubscribe", []string{"--url", urls[0], "--url", urls[1], "--pid", pids, "--unsubscribe"}, 2},
		{"one node procs", []string{"--url", urls[0], "--procs", "2"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := slices.Concat(common, tt.args, []string{"--json"})
			code, stdout, stderr := runTool(t, t.TempDir(), args...)
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			var res loadtest.Result
			if err := json.Unmarshal([]byte(stdout), &res); err != nil {
				t.Fatalf("summary %q: %v", stdout, err)
			}
			ch := res.Churn
			if ch == nil || len(res.Errors) != 0 || len(ch.Nodes) != tt.nodes {
				t.Fatalf("churn %+v, errors %v: want %d nodes, no errors", ch, res.Errors, tt.nodes)
			}
			c := ch.ChurnCounts
			if c.Connects < 20 || c.Disconnects != c.Connects || c.Subscribes != c.Connects || c.ConnectErrors+c.SubscribeRefused+c.Dropped != 0 {
				t.Fatalf("churn %+v: want every connect subscribed and disconnected", c)
			}
			for _, n := range ch.Nodes {
				if n.Connects == 0 || n.Disconnects != n.Connects {
					t.Fatalf("nodes %+v: want a share each", ch.Nodes)
				}
			}
			if tt.nodes == 2 {
				if c.Unsubscribes != c.Subscribes || res.Server == nil || len(res.Server.PIDs) != 2 || ch.Nodes[1].PID != nodes[1].cmd.Process.Pid {
					t.Fatalf("churn %+v, server %+v: want unsubscribes and both processes", c, res.Server)
				}
			}
		})
	}
}

// TestBenchReconnect kills one of two gyre processes once gyre bench
// says every connection is open, as scripts/bench-cluster does: the
// killed node's connections, held by two child processes, must all be
// back on the other node.
func TestBenchReconnect(t *testing.T) {
	t.Parallel()
	path := writeFile(t, "config.json", centrifugoConfig)
	nodes := []*proc{
		start(t, nil, "-c", path, "--http_server.port", "0"),
		start(t, nil, "-c", path, "--http_server.port", "0"),
	}
	var urls []string
	for _, p := range nodes {
		urls = append(urls, "ws"+strings.TrimPrefix(p.url(), "http")+"/connection/websocket")
	}
	cmd := exec.Command(binary, "bench", "idle", "--url", strings.Join(urls, ","), "--hmac-secret", testSecret,
		"--conns", "20", "--procs", "2", "--duration", "3s", "--reconnect", "--json")
	cmd.Env = cleanEnv()
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		progress.WriteString(lines.Text() + "\n")
		if strings.Contains(lines.Text(), "ready: 20 of 20 connections open") {
			nodes[1].signal(syscall.SIGKILL)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("gyre bench: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), progress.String())
	}
	var res loadtest.Result
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("summary %q: %v", stdout.String(), err)
	}
	rc := res.Reconnect
	if rc == nil || rc.Dropped != 10 || rc.Reconnected != 10 || rc.Failed != 0 || rc.Latency.Count != 10 {
		t.Fatalf("reconnect %+v, errors %v: want the 10 of the killed node back\n%s", rc, res.Errors, progress.String())
	}
	if nodes[1].wait(10*time.Second) == 0 {
		t.Fatal("the killed node exited with 0")
	}
}

func TestBenchUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"help", []string{"bench", "-h"}, 0, "Scenarios:"},
		{"no scenario", []string{"bench", "--url", "ws://127.0.0.1:1/"}, 1, "no scenario"},
		{"unknown scenario", []string{"bench", "storm", "--url", "ws://127.0.0.1:1/"}, 1, "unknown scenario"},
		{"bad protocol", []string{"bench", "idle", "--url", "ws://127.0.0.1:1/", "--protocol", "xml"}, 1, "json or protobuf"},
		{"no url", []string{"bench", "idle"}, 1, "url: missing"},
		{"fanout without api", []string{"bench", "fanout", "--url", "ws://127.0.0.1:1/"}, 1, "api: missing"},
		{"bad payload", []string{"bench", "fanout", "--url", "ws://127.0.0.1:1/", "--api", "http://127.0.0.1:1/api", "--payload", "xml"}, 1, "want pad or json"},
		{"stray argument", []string{"bench", "idle", "--url", "ws://127.0.0.1:1/", "extra"}, 1, "unexpected argument"},
		{"bad second api", []string{"bench", "fanout", "--url", "ws://127.0.0.1:1/", "--api", "http://127.0.0.1:1/api", "--api", "ws://127.0.0.1:2/api"}, 1, "is not a http:// URL"},
		{"reconnect in connect", []string{"bench", "connect", "--url", "ws://127.0.0.1:1/", "--reconnect"}, 1, "reconnect: only idle, fanout and channels"},
		{"pids for fewer urls", []string{"bench", "churn", "--url", "ws://127.0.0.1:1/", "--url", "ws://127.0.0.1:2/", "--pid", "10"}, 1, "1 process ids for 2 URLs"},
		{"bad pid", []string{"bench", "churn", "--url", "ws://127.0.0.1:1/", "--pid", "1,x"}, 1, "not a process id"},
		{"hold outside churn", []string{"bench", "idle", "--url", "ws://127.0.0.1:1/", "--hold", "1s"}, 1, "only churn"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runTool(t, t.TempDir(), tt.args...)
			if code != tt.code || !strings.Contains(stdout+stderr, tt.want) {
				t.Fatalf("exit %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", code, tt.code, tt.want, stdout, stderr)
			}
		})
	}
}
