package websocket

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/gyrehq/gyre/internal/wstest"
)

// sink collects what ServeReads delivers and notices when two messages of
// one connection are handled at once.
type sink struct {
	msgs    chan readResult
	errs    chan error
	busy    atomic.Int32
	overlap atomic.Bool
	stopAt  string // onMessage returns false for this payload
}

func newSink() *sink {
	return &sink{msgs: make(chan readResult, 1024), errs: make(chan error, 2)}
}

func (s *sink) onMessage(p []byte, binary bool) bool {
	if s.busy.Add(1) != 1 {
		s.overlap.Store(true)
	}
	s.msgs <- readResult{payload: bytes.Clone(p), binary: binary}
	s.busy.Add(-1)
	return string(p) != s.stopAt
}

func (s *sink) onError(err error) { s.errs <- err }

func (s *sink) next(t testing.TB) readResult {
	t.Helper()
	select {
	case m := <-s.msgs:
		return m
	case err := <-s.errs:
		t.Fatalf("reading ended with %v, want a message", err)
	case <-time.After(hangTimeout):
		t.Fatal("no message")
	}
	return readResult{}
}

func (s *sink) end(t testing.TB) error {
	t.Helper()
	select {
	case err := <-s.errs:
		return err
	case m := <-s.msgs:
		t.Fatalf("got message %q, want the end of reading", m.payload)
	case <-time.After(hangTimeout):
		t.Fatal("reading did not end")
	}
	return nil
}

// pollModes runs f with a poller (where there is one) and without.
func pollModes(t *testing.T, f func(t *testing.T, p *Poller)) {
	t.Run("goroutine", func(t *testing.T) { f(t, nil) })
	t.Run("poller", func(t *testing.T) {
		p, err := NewPoller()
		if errors.Is(err, ErrPollUnsupported) {
			t.Skip(err)
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		f(t, p)
	})
}

// chunks sends pieces of the wire one write at a time, with a pause so
// that the server sees them apart.
func chunks(cl *client, parts ...[]byte) {
	for i, p := range parts {
		if i > 0 {
			time.Sleep(5 * time.Millisecond)
		}
		cl.sendRaw(p)
	}
}

func TestServeReadsWire(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 10000)
	one, two, three := wstest.MaskedFrame(0x81, []byte("one")), wstest.MaskedFrame(0x81, []byte("two")), wstest.MaskedFrame(0x82, []byte("three"))
	bigFrame := wstest.MaskedFrame(0x81, big)
	tests := []struct {
		name  string
		parts [][]byte
		want  []string
	}{
		{"one frame", [][]byte{one}, []string{"one"}},
		{"frames together", [][]byte{concat(one, two, three)}, []string{"one", "two", "three"}},
		{"header then payload", [][]byte{one[:2], one[2:6], one[6:]}, []string{"one"}},
		{"frame and a half", [][]byte{concat(one, two[:3]), two[3:]}, []string{"one", "two"}},
		{"large frame in parts", [][]byte{bigFrame[:100], bigFrame[100:5000], bigFrame[5000:]}, []string{string(big)}},
		{"fragments", [][]byte{wstest.MaskedFrame(0x01, []byte("fr")), wstest.MaskedFrame(0x80, []byte("ag"))}, []string{"frag"}},
		{"ping between", [][]byte{concat(one, wstest.MaskedFrame(0x89, []byte("p"))), two}, []string{"one", "two"}},
		{"ping alone, then data", [][]byte{wstest.MaskedFrame(0x89, nil), three}, []string{"three"}},
	}
	pollModes(t, func(t *testing.T, p *Poller) {
		s := newTestServer(t, Options{})
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				cl, c := s.connect(t, "/")
				sk := newSink()
				c.ServeReads(p, sk.onMessage, sk.onError)
				chunks(cl, tt.parts...)
				for _, want := range tt.want {
					if got := sk.next(t); string(got.payload) != want {
						t.Fatalf("got %q, want %q", trim(got.payload), trim([]byte(want)))
					}
				}
				_ = c.Close(1000, "")
				if err := sk.end(t); !errors.Is(err, ErrClosed) {
					t.Fatalf("reading ended with %v, want ErrClosed", err)
				}
			})
		}
	})
}

func concat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func trim(p []byte) []byte { return p[:min(len(p), 20)] }

func TestServeReadsEnds(t *testing.T) {
	ends := []struct {
		name    string
		end     func(t *testing.T, cl *client, c *Conn)
		wantErr func(error) bool
	}{
		{
			name:    "server closes while waiting",
			end:     func(_ *testing.T, _ *client, c *Conn) { _ = c.Close(3001, "shutdown") },
			wantErr: func(err error) bool { return errors.Is(err, ErrClosed) },
		},
		{
			name: "client closes",
			end: func(_ *testing.T, cl *client, _ *Conn) {
				cl.send(ws.OpClose, true, ws.NewCloseFrameBody(1000, ""))
			},
			wantErr: func(err error) bool { var ce *CloseError; return errors.As(err, &ce) },
		},
		{
			name:    "client drops",
			end:     func(_ *testing.T, cl *client, _ *Conn) { _ = cl.conn.Close() },
			wantErr: func(err error) bool { return errors.Is(err, io.EOF) },
		},
		{
			name: "client resets",
			end: func(t *testing.T, cl *client, _ *Conn) {
				if err := cl.conn.(*net.TCPConn).SetLinger(0); err != nil {
					t.Fatal(err)
				}
				_ = cl.conn.Close()
			},
			wantErr: func(err error) bool { return err != nil && !errors.Is(err, ErrClosed) },
		},
		{
			name:    "client breaks the protocol",
			end:     func(_ *testing.T, cl *client, _ *Conn) { cl.sendRaw([]byte{0x81, 0x00}) },
			wantErr: func(err error) bool { return errors.Is(err, ErrProtocol) },
		},
	}
	pollModes(t, func(t *testing.T, p *Poller) {
		s := newTestServer(t, Options{})
		for _, e := range ends {
			t.Run(e.name, func(t *testing.T) {
				cl, c := s.connect(t, "/")
				sk := newSink()
				c.ServeReads(p, sk.onMessage, sk.onError)
				cl.send(ws.OpText, true, []byte("{}"))
				sk.next(t)
				e.end(t, cl, c)
				if err := sk.end(t); !e.wantErr(err) {
					t.Fatalf("reading ended with %v", err)
				}
				_ = c.Close(1000, "")
				select {
				case err := <-sk.errs:
					t.Fatalf("onError called again with %v", err)
				case <-time.After(10 * time.Millisecond):
				}
				waitPollerEmpty(t, p)
			})
		}
	})
}

func TestServeReadsStop(t *testing.T) {
	pollModes(t, func(t *testing.T, p *Poller) {
		s := newTestServer(t, Options{})
		cl, c := s.connect(t, "/")
		sk := newSink()
		sk.stopAt = "stop"
		c.ServeReads(p, sk.onMessage, sk.onError)
		cl.sendRaw(concat(wstest.MaskedFrame(0x81, []byte("a")), wstest.MaskedFrame(0x81, []byte("stop")), wstest.MaskedFrame(0x81, []byte("b"))))
		for _, want := range []string{"a", "stop"} {
			if got := sk.next(t); string(got.payload) != want {
				t.Fatalf("got %q, want %q", got.payload, want)
			}
		}
		waitPollerEmpty(t, p)
		_ = c.Close(1000, "")
		select {
		case m := <-sk.msgs:
			t.Fatalf("got %q after onMessage returned false", m.payload)
		case err := <-sk.errs:
			t.Fatalf("onError(%v) after onMessage returned false", err)
		case <-time.After(20 * time.Millisecond):
		}
	})
}

// TestServeReadsManyConnections sends bursts on many connections at once;
// each must see its messages in order and never two at a time.
func TestServeReadsManyConnections(t *testing.T) {
	const conns, msgs = 100, 50
	pollModes(t, func(t *testing.T, p *Poller) {
		checkNoLeak(t)
		s := newTestServer(t, Options{})
		var wg sync.WaitGroup
		for i := range conns {
			cl, c := s.connect(t, "/")
			sk := newSink()
			c.ServeReads(p, sk.onMessage, sk.onError)
			wg.Go(func() {
				var wire []byte
				for j := range msgs {
					wire = append(wire, wstest.MaskedFrame(0x81, []byte(strconv.Itoa(j)))...)
					if j%7 == i%7 {
						cl.sendRaw(wire)
						wire = wire[:0]
					}
				}
				cl.sendRaw(wire)
			})
			t.Cleanup(func() {
				for j := range msgs {
					if got := sk.next(t); string(got.payload) != strconv.Itoa(j) {
						t.Errorf("connection %d: got %q, want %d", i, got.payload, j)
						return
					}
				}
				if sk.overlap.Load() {
					t.Errorf("connection %d: two messages handled at once", i)
				}
				_ = cl.conn.Close()
				if err := sk.end(t); !errors.Is(err, io.EOF) {
					t.Errorf("connection %d: reading ended with %v, want EOF", i, err)
				}
			})
		}
		wg.Wait()
	})
}

// TestPollerIdleGoroutines holds 1,000 connections that talked and went
// quiet: with a poller none of them keeps a goroutine.
func TestPollerIdleGoroutines(t *testing.T) {
	const n = 1000
	p, err := NewPoller()
	if errors.Is(err, ErrPollUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	s := newTestServer(t, Options{})
	base := runtime.NumGoroutine()
	type end struct {
		cl *client
		sk *sink
	}
	ends := make([]end, n)
	for i := range ends {
		cl, c := s.connect(t, "/")
		sk := newSink()
		c.ServeReads(p, sk.onMessage, sk.onError)
		cl.sendRaw(concat(wstest.MaskedFrame(0x81, []byte("hi")), wstest.MaskedFrame(0x89, nil)))
		sk.next(t)
		if f := cl.recv(); f.Header.OpCode != ws.OpPong {
			t.Fatalf("got opcode %v, want pong", f.Header.OpCode)
		}
		ends[i] = end{cl, sk}
	}
	if extra := settleGoroutines(base, 10); extra > 10 {
		t.Fatalf("%d goroutines serve %d idle connections", extra, n)
	}
	if got := p.Len(); got != n {
		t.Fatalf("poller holds %d connections, want %d", got, n)
	}
	for i, e := range ends {
		e.cl.send(ws.OpText, true, []byte(fmt.Sprint(i)))
	}
	for i, e := range ends {
		if got := e.sk.next(t); string(got.payload) != fmt.Sprint(i) {
			t.Fatalf("connection %d: got %q", i, got.payload)
		}
	}
}

// settleGoroutines waits until at most want goroutines more than base
// exist, and returns how many there are.
func settleGoroutines(base, want int) int {
	deadline := time.Now().Add(hangTimeout)
	for {
		n := runtime.NumGoroutine() - base
		if n <= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func waitPollerEmpty(t *testing.T, p *Poller) {
	t.Helper()
	if p == nil {
		return
	}
	deadline := time.Now().Add(hangTimeout)
	for p.Len() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("poller still holds %d connections", p.Len())
		}
		time.Sleep(time.Millisecond)
	}
}

func TestPollerClose(t *testing.T) {
	p, err := NewPoller()
	if errors.Is(err, ErrPollUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	checkNoLeak(t)
	s := newTestServer(t, Options{})
	_, c := s.connect(t, "/")
	sk := newSink()
	c.ServeReads(p, sk.onMessage, sk.onError)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sk.end(t); !errors.Is(err, ErrPollerClosed) {
		t.Fatalf("reading ended with %v, want ErrPollerClosed", err)
	}
	_, c2 := s.connect(t, "/")
	sk2 := newSink()
	c2.ServeReads(p, sk2.onMessage, sk2.onError)
	if err := sk2.end(t); !errors.Is(err, ErrPollerClosed) {
		t.Fatalf("registering after Close ended with %v, want ErrPollerClosed", err)
	}
}

// TestServeReadsTLS checks a TLS connection, which cannot be polled, is
// served by a goroutine.
func TestServeReadsTLS(t *testing.T) {
	pollModes(t, func(t *testing.T, p *Poller) {
		s := newTLSTestServer(t, Options{})
		cl, c := s.connect(t, "/")
		sk := newSink()
		c.ServeReads(p, sk.onMessage, sk.onError)
		cl.send(ws.OpText, true, []byte("secret"))
		if got := sk.next(t); string(got.payload) != "secret" {
			t.Fatalf("got %q", got.payload)
		}
		if p != nil && p.Len() != 0 {
			t.Fatal("a TLS connection was registered with the poller")
		}
	})
}

// TestServeReadsBufferedAtStart: frames that came behind the handshake sit
// in the connection's buffer when ServeReads starts; they are served first,
// and the connection is then added to the poller (not re-armed in it, where
// it never was) so that later frames arrive too.
func TestServeReadsBufferedAtStart(t *testing.T) {
	pollModes(t, func(t *testing.T, p *Poller) {
		s := newTestServer(t, Options{})
		nc := dialPipelined(t, s, wstest.MaskedFrame(0x81, []byte("one")))
		u := s.accept(t)
		if u.err != nil {
			t.Fatalf("Upgrade: %v", u.err)
		}
		if u.conn.in.buffered() == 0 {
			t.Fatal("the frame behind the handshake is not buffered; the test needs it to be")
		}
		sk := newSink()
		u.conn.ServeReads(p, sk.onMessage, sk.onError)
		if got := sk.next(t); string(got.payload) != "one" {
			t.Fatalf("got %q, want one", got.payload)
		}
		if _, err := nc.Write(wstest.MaskedFrame(0x81, []byte("two"))); err != nil {
			t.Fatal(err)
		}
		if got := sk.next(t); string(got.payload) != "two" {
			t.Fatalf("got %q, want two", got.payload)
		}
		_ = u.conn.Close(1000, "")
		if err := sk.end(t); !errors.Is(err, ErrClosed) {
			t.Fatalf("reading ended with %v, want ErrClosed", err)
		}
	})
}
