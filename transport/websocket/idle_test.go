package websocket

import (
	"bufio"
	"bytes"
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
	"time"

	"github.com/gobwas/httphead"
	"github.com/gobwas/ws"
)

// The idle-connection benchmark runs its clients in a child process (this
// test binary again) so that only the server side is measured.
const (
	idleClientEnv  = "GYRE_WS_IDLE_CLIENT"
	idleCountEnv   = "GYRE_WS_IDLE_COUNT"
	idleDeflateEnv = "GYRE_WS_IDLE_DEFLATE" // offer permessage-deflate
)

// idleMessage is what each idle client sends once, and the server answers
// with, before the connection goes quiet: compressed where negotiated.
var idleMessage = []byte(strings.Repeat(`{"id":1,"publish":{"channel":"news","data":{"text":"hello"}}}`, 16))

func TestMain(m *testing.M) {
	if addr := os.Getenv(idleClientEnv); addr != "" {
		n, _ := strconv.Atoi(os.Getenv(idleCountEnv))
		if err := runIdleClients(addr, n, os.Getenv(idleDeflateEnv) != ""); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runIdleClients opens n connections, sends one message on each,
// compressed if deflate is set, says "ready" and holds them until its
// standard input closes.
func runIdleClients(url string, n int, deflate bool) error {
	var d ws.Dialer
	msg := ws.NewTextFrame(idleMessage)
	if deflate {
		d.Extensions = []httphead.Option{httphead.NewOption("permessage-deflate", nil)}
		msg = ws.NewTextFrame((&Compression{Level: 1}).deflate(nil, idleMessage))
		msg.Header.Rsv = ws.Rsv(true, false, false)
	}
	conns := make([]io.Closer, 0, n)
	for i := range n {
		c, _, hs, err := d.Dial(context.Background(), url)
		if err != nil {
			return fmt.Errorf("connection %d: %w", i, err)
		}
		if deflate != (len(hs.Extensions) == 1) {
			return fmt.Errorf("connection %d: extensions %v", i, hs.Extensions)
		}
		if err := ws.WriteFrame(c, ws.MaskFrame(msg)); err != nil {
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
// or through a Poller. Each client sends one message and gets one back
// before going quiet, compressed in the deflate runs, which negotiate
// permessage-deflate. It reports what one connection costs the server: Go
// heap, goroutine stack and resident memory.
//
// The runtime keeps the descriptors of ended goroutines for reuse, so the
// first connections of a process cost more than later ones: an unmeasured
// run first puts every measured run on the same footing (which leaves a
// goroutine's descriptor, some 400 bytes, out of the goroutine runs).
// Run it alone: go test -run '^$' -bench IdleConnections -benchtime 1x
func BenchmarkIdleConnections(b *testing.B) {
	idleCost(b, nil, false)
	for _, mode := range []string{"plain", "deflate"} {
		deflate := mode == "deflate"
		b.Run("goroutine/"+mode, func(b *testing.B) { reportIdleCost(b, idleCost(b, nil, deflate)) })
		b.Run("poller/"+mode, func(b *testing.B) {
			p, err := NewPoller()
			if err != nil {
				b.Skip(err)
			}
			defer p.Close()
			reportIdleCost(b, idleCost(b, p, deflate))
		})
	}
}

func reportIdleCost(b *testing.B, perConn memCost) {
	b.ReportAllocs()
	for b.Loop() {
	}
	b.ReportMetric(perConn.heap, "heap-B/conn")
	b.ReportMetric(perConn.stack, "stack-B/conn")
	b.ReportMetric(perConn.rss, "rss-B/conn")
}

// memCost is the server's memory per connection.
type memCost struct {
	heap, stack, rss float64
}

// idleCost measures what an idle connection costs, read through p (nil
// for a goroutine per connection), with compression negotiated or not.
func idleCost(b *testing.B, p *Poller, deflate bool) memCost {
	// The connections of a run end after it (closing ones linger for a
	// while): wait for them, so that the next run starts from a heap
	// without them instead of counting their release as its own saving.
	goroutines := runtime.NumGoroutine()
	defer func() {
		for deadline := time.Now().Add(hangTimeout); runtime.NumGoroutine() > goroutines && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
	}()
	const n = 10000
	var (
		ready   atomic.Int64
		readers sync.WaitGroup
	)
	opts := Options{}
	if deflate {
		opts.Compression = &Compression{Level: 1}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _, err := Upgrade(w, r, opts)
		if err != nil {
			return
		}
		if (c.Compression() != nil) != deflate {
			b.Errorf("compression negotiated: %v", c.Compression() != nil)
		}
		readers.Add(1)
		c.ServeReads(p, func(payload []byte, _ bool) bool {
			if !bytes.Equal(payload, idleMessage) {
				b.Errorf("read %d bytes, want the %d sent", len(payload), len(idleMessage))
			}
			if err := c.WriteFrame(payload); err != nil {
				b.Errorf("WriteFrame: %v", err)
			}
			ready.Add(1)
			return true
		}, func(error) {
			_ = c.Close(1000, "")
			readers.Done()
		})
	}))
	defer srv.Close()

	before := sampleMemory()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), idleClientEnv+"="+strings.Replace(srv.URL, "http", "ws", 1), idleCountEnv+"="+strconv.Itoa(n))
	if deflate {
		cmd.Env = append(cmd.Env, idleDeflateEnv+"=1")
	}
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
	perConn := func(a, b uint64) float64 { return float64(int64(a)-int64(b)) / n }
	cost := memCost{
		heap:  perConn(after.heap, before.heap),
		stack: perConn(after.stack, before.stack),
		rss:   perConn(after.rss, before.rss),
	}

	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		b.Errorf("clients: %v", err)
	}
	readers.Wait()
	return cost
}
