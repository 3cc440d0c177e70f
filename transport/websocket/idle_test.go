package websocket

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gobwas/ws"
)

// The idle-connection benchmark runs its clients in a child process (this
// test binary again) so that only the server side is measured.
const (
	idleClientEnv = "GYRE_WS_IDLE_CLIENT"
	idleCountEnv  = "GYRE_WS_IDLE_COUNT"
)

func TestMain(m *testing.M) {
	if addr := os.Getenv(idleClientEnv); addr != "" {
		n, _ := strconv.Atoi(os.Getenv(idleCountEnv))
		if err := runIdleClients(addr, n); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runIdleClients opens n connections, says "ready" and holds them until
// its standard input closes.
func runIdleClients(url string, n int) error {
	conns := make([]io.Closer, 0, n)
	for i := range n {
		c, _, _, err := ws.Dial(context.Background(), url)
		if err != nil {
			return fmt.Errorf("connection %d: %w", i, err)
		}
		conns = append(conns, c)
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	for _, c := range conns {
		_ = c.Close()
	}
	return nil
}

// memSample is the server process's memory at one moment.
type memSample struct {
	heap, stack, rss uint64
}

func sampleMemory() memSample {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memSample{heap: ms.HeapAlloc, stack: ms.StackInuse, rss: readRSS()}
}

// readRSS returns the resident set size from /proc, or 0 elsewhere.
func readRSS() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// BenchmarkIdleConnections holds 10,000 upgraded connections, read as the
// engine reads them: by a goroutine per connection blocked in ReadMessage,
// or through a Poller. It reports what one costs the server: Go heap,
// goroutine stack and resident memory.
// Run it alone: go test -run '^$' -bench IdleConnections -benchtime 1x
func BenchmarkIdleConnections(b *testing.B) {
	b.Run("goroutine", func(b *testing.B) { benchIdle(b, nil) })
	b.Run("poller", func(b *testing.B) {
		p, err := NewPoller()
		if err != nil {
			b.Skip(err)
		}
		defer p.Close()
		benchIdle(b, p)
	})
}

func benchIdle(b *testing.B, p *Poller) {
	b.ReportAllocs()
	const n = 10000
	var (
		ready   atomic.Int64
		readers sync.WaitGroup
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _, err := Upgrade(w, r, Options{})
		if err != nil {
			return
		}
		readers.Add(1)
		ready.Add(1)
		c.ServeReads(p, func([]byte, bool) bool { return true }, func(error) {
			_ = c.Close(1000, "")
			readers.Done()
		})
	}))
	defer srv.Close()

	before := sampleMemory()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), idleClientEnv+"="+strings.Replace(srv.URL, "http", "ws", 1), idleCountEnv+"="+strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		b.Fatalf("clients: %q %v", line, err)
	}
	for ready.Load() < n {
		runtime.Gosched()
	}
	after := sampleMemory()
	for b.Loop() {
	}
	perConn := func(a, b uint64) float64 { return float64(int64(a)-int64(b)) / n }
	b.ReportMetric(perConn(after.heap, before.heap), "heap-B/conn")
	b.ReportMetric(perConn(after.stack, before.stack), "stack-B/conn")
	b.ReportMetric(perConn(after.rss, before.rss), "rss-B/conn")

	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		b.Errorf("clients: %v", err)
	}
	readers.Wait()
}
