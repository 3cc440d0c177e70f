package websocket

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
)

// transports runs a test over plain TCP, where frames go out with writev,
// and over TLS, where they are joined in a pooled buffer.
func transports(t *testing.T, opts Options, run func(t *testing.T, s *testServer)) {
	t.Run("tcp", func(t *testing.T) { run(t, newTestServer(t, opts)) })
	t.Run("tls", func(t *testing.T) { run(t, newTLSTestServer(t, opts)) })
}

func TestWriteFrame(t *testing.T) {
	sizes := []int{0, 1, 125, 126, 65535, 65536, 300000}
	transports(t, Options{}, func(t *testing.T, s *testServer) {
		for _, n := range sizes {
			t.Run(strconv.Itoa(n), func(t *testing.T) {
				cl, c := s.connect(t, "/")
				payload := bytes.Repeat([]byte{'p'}, n)
				done := make(chan error, 1)
				go func() { done <- c.WriteFrame(payload) }()
				f := cl.recv()
				if err := <-done; err != nil {
					t.Fatalf("WriteFrame: %v", err)
				}
				if !f.Header.Fin || f.Header.OpCode != ws.OpText || !bytes.Equal(f.Payload, payload) {
					t.Errorf("frame fin=%v op=%v len=%d, want fin text len=%d", f.Header.Fin, f.Header.OpCode, len(f.Payload), n)
				}
			})
		}
	})
}

func TestWriteFrameParts(t *testing.T) {
	msg := bytes.Repeat([]byte("m"), 128)
	many := make([][]byte, 0, 199)
	for i := range 100 {
		if i > 0 {
			many = append(many, []byte("\n"))
		}
		many = append(many, msg)
	}
	tests := []struct {
		name  string
		parts [][]byte
	}{
		{name: "none", parts: nil},
		{name: "one", parts: [][]byte{[]byte(`{"id":1}`)}},
		{name: "with empty parts", parts: [][]byte{{}, []byte("a"), {}, []byte("b")}},
		{name: "100 messages", parts: many},
		{
			name: "mixed sizes",
			parts: [][]byte{
				[]byte("head"), bytes.Repeat([]byte("B"), copyPartMax), []byte("s1"), []byte("s2"),
				bytes.Repeat([]byte("C"), 5000), bytes.Repeat([]byte("D"), 3000), []byte("tail"),
			},
		},
		{name: "over 64 KiB", parts: [][]byte{bytes.Repeat([]byte("a"), 40000), bytes.Repeat([]byte("b"), 40000)}},
	}
	transports(t, Options{}, func(t *testing.T, s *testServer) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				cl, c := s.connect(t, "/", SubprotocolProtobuf)
				done := make(chan error, 1)
				go func() { done <- c.WriteFrameParts(tt.parts) }()
				f := cl.recv()
				if err := <-done; err != nil {
					t.Fatalf("WriteFrameParts: %v", err)
				}
				want := bytes.Join(tt.parts, nil)
				if !f.Header.Fin || f.Header.OpCode != ws.OpBinary || !bytes.Equal(f.Payload, want) {
					t.Errorf("frame fin=%v op=%v len=%d, want fin binary len=%d", f.Header.Fin, f.Header.OpCode, len(f.Payload), len(want))
				}
			})
		}
	})
}

func TestClose(t *testing.T) {
	long := strings.Repeat("r", 200)
	// 61 two-byte runes: 122 bytes, then one that would end at byte 124.
	runes := strings.Repeat("é", 61) + "é"
	tests := []struct {
		name       string
		code       uint16
		reason     string
		wantCode   ws.StatusCode
		wantReason string
	}{
		{name: "bad request", code: 3501, reason: "bad request", wantCode: 3501, wantReason: "bad request"},
		{name: "no reason", code: 3000, wantCode: 3000},
		{name: "normal", code: 1000, reason: "bye", wantCode: 1000, wantReason: "bye"},
		{name: "message too big", code: 1009, reason: "message too big", wantCode: 1009, wantReason: "message too big"},
		{name: "long reason cut", code: 4000, reason: long, wantCode: 4000, wantReason: long[:maxCloseReason]},
		{name: "cut on a rune boundary", code: 3001, reason: runes, wantCode: 3001, wantReason: runes[:122]},
		{name: "reason made UTF-8", code: 3001, reason: "a\xffb", wantCode: 3001, wantReason: "a\uFFFDb"},
		{name: "zero code", code: 0, reason: "ignored"},
		{name: "reserved code", code: 1006, reason: "ignored"},
	}
	transports(t, Options{}, func(t *testing.T, s *testServer) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				cl, c := s.connect(t, "/")
				if err := c.Close(tt.code, tt.reason); err != nil {
					t.Fatalf("Close: %v", err)
				}
				code, reason := cl.recvClose()
				if code != tt.wantCode || reason != tt.wantReason {
					t.Errorf("client saw %d %q, want %d %q", code, reason, tt.wantCode, tt.wantReason)
				}
				if err := c.Close(1000, "again"); err != nil {
					t.Errorf("second Close: %v", err)
				}
				if err := c.WriteFrame([]byte("{}")); !errors.Is(err, ErrClosed) {
					t.Errorf("WriteFrame after Close: %v, want ErrClosed", err)
				}
				if _, _, err := c.ReadMessage(); !errors.Is(err, ErrClosed) {
					t.Errorf("ReadMessage after Close: %v, want ErrClosed", err)
				}
			})
		}
	})
}

func TestCloseUnblocksReader(t *testing.T) {
	s := newTestServer(t, Options{})
	cl, c := s.connect(t, "/")
	ch := readAsync(c)
	if err := c.Close(3001, "shutdown"); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if r := waitRead(t, ch); !errors.Is(r.err, ErrClosed) {
		t.Errorf("ReadMessage: %v, want ErrClosed", r.err)
	}
	if code, reason := cl.recvClose(); code != 3001 || reason != "shutdown" {
		t.Errorf("client saw %d %q", code, reason)
	}
}

// TestConcurrentWriteAndClose races writers against Close and checks the
// client sees whole frames, then the close frame, then the end of stream.
func TestConcurrentWriteAndClose(t *testing.T) {
	checkNoLeak(t)
	transports(t, Options{}, func(t *testing.T, s *testServer) {
		for round := range 20 {
			cl, c := s.connect(t, "/")
			payload := []byte(`{"push":{"channel":"c","pub":{"data":{"n":1}}}}`)
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					for {
						if err := c.WriteFrame(payload); err != nil {
							if !errors.Is(err, ErrClosed) {
								t.Errorf("WriteFrame: %v", err)
							}
							return
						}
					}
				})
			}
			wg.Go(func() {
				_ = c.WriteFrameParts([][]byte{payload, []byte("\n"), payload})
				if err := c.Close(3001, "shutdown"); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			wg.Go(func() { _ = c.Close(3001, "shutdown") })
			for {
				f := cl.recv()
				if f.Header.OpCode == ws.OpClose {
					code, reason := ws.ParseCloseFrameData(f.Payload)
					if code != 3001 || reason != "shutdown" {
						t.Errorf("round %d: close %d %q", round, code, reason)
					}
					break
				}
				if f.Header.OpCode != ws.OpText || !bytes.HasPrefix(f.Payload, payload) {
					t.Fatalf("round %d: bad frame op=%v payload=%q", round, f.Header.OpCode, abbrev(f.Payload))
				}
			}
			cl.expectEOF()
			wg.Wait()
		}
	})
}

// TestCloseDuringBlockedWrite checks Close does not wait for a writer stuck
// on a peer that does not read, and that the close frame follows the frame
// in flight once the peer reads again.
func TestCloseDuringBlockedWrite(t *testing.T) {
	transports(t, Options{WriteTimeout: time.Minute}, func(t *testing.T, s *testServer) {
		cl, c := s.connect(t, "/")
		// A first frame, read by the client, so that nothing of the
		// connection's start is still writing when the test looks for the
		// big write in flight below (it looks at the write lock).
		if err := c.WriteFrame([]byte("first")); err != nil {
			t.Fatal(err)
		}
		if f := cl.recv(); string(f.Payload) != "first" {
			t.Fatalf("first frame %q", f.Payload)
		}
		big := bytes.Repeat([]byte("b"), 16<<20) // more than socket buffers hold unread
		wrote := make(chan error, 1)
		go func() { wrote <- c.WriteFrame(big) }()
		waitWriteInFlight(t, c)
		if err := c.Close(3008, "slow"); err != nil {
			t.Fatalf("Close: %v", err)
		}
		select {
		case err := <-wrote:
			t.Fatalf("the write ended (%v) although the client reads nothing", err)
		default:
		}
		f := cl.recv()
		if len(f.Payload) != len(big) {
			t.Fatalf("frame of %d bytes, want %d", len(f.Payload), len(big))
		}
		if err := <-wrote; err != nil {
			t.Errorf("WriteFrame: %v", err)
		}
		if code, reason := cl.recvClose(); code != 3008 || reason != "slow" {
			t.Errorf("client saw %d %q, want 3008 slow", code, reason)
		}
	})
}

// TestWriteTimeout checks a write to a peer that stops reading fails with
// a deadline error, and that the connection then closes without a close
// frame it could not deliver.
func TestWriteTimeout(t *testing.T) {
	transports(t, Options{WriteTimeout: 50 * time.Millisecond}, func(t *testing.T, s *testServer) {
		cl, c := s.connect(t, "/")
		chunk := bytes.Repeat([]byte("t"), 1<<20)
		var err error
		for range 1000 {
			if err = c.WriteFrame(chunk); err != nil {
				break
			}
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("WriteFrame: %v, want a deadline error", err)
		}
		if err2 := c.WriteFrame([]byte("x")); err2 != err {
			t.Errorf("next WriteFrame: %v, want the same error", err2)
		}
		if err := c.Close(3008, "slow"); err != nil {
			t.Errorf("Close: %v", err)
		}
		_ = cl.conn.SetReadDeadline(time.Now().Add(hangTimeout))
		// The peer has half a frame (and over TLS half a record) and then
		// the end of the stream.
		_, err = io.Copy(io.Discard, cl.r)
		if err != nil && !isReset(err) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("client drain: %v", err)
		}
	})
}

func TestWriteFrameAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	s := newTestServer(t, Options{})
	cl, c := s.connect(t, "/")
	go func() { _, _ = io.Copy(io.Discard, cl.conn) }()
	payload := bytes.Repeat([]byte("a"), 1024)
	parts := [][]byte{payload, []byte("\n"), payload}
	tests := []struct {
		name  string
		write func() error
	}{
		{name: "WriteFrame", write: func() error { return c.WriteFrame(payload) }},
		{name: "WriteFrameParts", write: func() error { return c.WriteFrameParts(parts) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_ = tt.write() // warm the pools
			allocs := testing.AllocsPerRun(200, func() {
				if err := tt.write(); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("%v allocations per write, want 0", allocs)
			}
		})
	}
}

// waitWriteInFlight returns once some goroutine holds the write lock.
func waitWriteInFlight(t *testing.T, c *Conn) {
	t.Helper()
	deadline := time.Now().Add(hangTimeout)
	for c.wmu.TryLock() {
		c.wmu.Unlock()
		if time.Now().After(deadline) {
			t.Fatal("no write started")
		}
		time.Sleep(time.Millisecond)
	}
}
