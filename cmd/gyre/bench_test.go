package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

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
