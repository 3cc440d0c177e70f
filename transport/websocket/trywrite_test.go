package websocket

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/gobwas/ws"
)

// tryFrame is payload with the room TryWriteFrame needs before it.
func tryFrame(payload []byte) []byte {
	return append(make([]byte, FrameHeaderRoom, FrameHeaderRoom+len(payload)), payload...)
}

// TestTryWriteFrame: frames of each header size leave whole when the
// socket takes them.
func TestTryWriteFrame(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("TryWriteFrame is for unix sockets")
	}
	s := newTestServer(t, Options{})
	cl, c := s.connect(t, "/")
	if !c.CanTryWrite() {
		t.Fatal("CanTryWrite is false on a TCP connection")
	}
	for _, n := range []int{0, 1, 125, 126, 65535, 65536} {
		payload := bytes.Repeat([]byte{'p'}, n)
		done := make(chan error, 1)
		go func() {
			complete, err := c.TryWriteFrame(tryFrame(payload))
			if err == nil && !complete {
				err = c.FlushFrame()
			}
			done <- err
		}()
		f := cl.recv()
		if err := <-done; err != nil {
			t.Fatalf("TryWriteFrame of %d bytes: %v", n, err)
		}
		if !f.Header.Fin || f.Header.OpCode != ws.OpText || !bytes.Equal(f.Payload, payload) {
			t.Fatalf("frame fin=%v op=%v len=%d, want fin text len=%d", f.Header.Fin, f.Header.OpCode, len(f.Payload), n)
		}
	}
}

// TestTryWriteFrameFullSocket: to a peer that reads nothing, TryWriteFrame
// returns at once with what the socket did not take kept; whatever is
// written next (a frame, a pong, the close frame) goes after that rest,
// so that the peer reads every frame whole and in order once it reads.
func TestTryWriteFrameFullSocket(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("TryWriteFrame is for unix sockets")
	}
	for _, next := range []string{"flush", "frame", "pong", "close"} {
		t.Run(next, func(t *testing.T) {
			s := newTestServer(t, Options{WriteTimeout: time.Minute})
			cl, c := s.connect(t, "/")
			chunk := bytes.Repeat([]byte("f"), 64<<10)
			var sent [][]byte
			for i := 0; ; i++ {
				if i == 10000 {
					t.Fatal("the socket took 640 MB unread")
				}
				payload := append([]byte(fmt.Sprintf("%06d", i)), chunk...)
				sent = append(sent, payload)
				complete, err := c.TryWriteFrame(tryFrame(payload))
				if err != nil {
					t.Fatalf("TryWriteFrame: %v", err)
				}
				if !complete {
					break
				}
			}
			if next == "frame" {
				sent = append(sent, []byte("after"))
			}
			done := make(chan error, 1)
			go func() {
				switch next {
				case "flush":
					done <- c.FlushFrame()
				case "frame":
					done <- c.WriteFrame([]byte("after"))
				case "pong":
					done <- c.writeControl(opPong, []byte("pong"))
				case "close":
					done <- c.Close(3008, "slow")
				}
			}()
			select {
			case err := <-done:
				t.Fatalf("%s returned (%v) although the peer reads nothing", next, err)
			case <-time.After(50 * time.Millisecond):
			}
			for i, want := range sent {
				f := cl.recv()
				if f.Header.OpCode != ws.OpText || !bytes.Equal(f.Payload, want) {
					t.Fatalf("frame %d: op %v, %d bytes %.10q, want text %.10q", i, f.Header.OpCode, len(f.Payload), f.Payload, want)
				}
			}
			switch next {
			case "pong":
				if f := cl.recv(); f.Header.OpCode != ws.OpPong || string(f.Payload) != "pong" {
					t.Fatalf("after the frames: op %v %q, want the pong", f.Header.OpCode, f.Payload)
				}
			case "close":
				if code, reason := cl.recvClose(); code != 3008 || reason != "slow" {
					t.Fatalf("close %d %q, want 3008 slow", code, reason)
				}
			}
			if err := <-done; err != nil {
				t.Fatalf("%s: %v", next, err)
			}
		})
	}
}

// TestTryWriteFrameAfterDeadline: a deadline an earlier write set, long
// past, does not fail a later TryWriteFrame.
func TestTryWriteFrameAfterDeadline(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("TryWriteFrame is for unix sockets")
	}
	s := newTestServer(t, Options{WriteTimeout: 20 * time.Millisecond})
	cl, c := s.connect(t, "/")
	if err := c.WriteFrame([]byte("one")); err != nil {
		t.Fatal(err)
	}
	cl.recv()
	time.Sleep(50 * time.Millisecond)
	complete, err := c.TryWriteFrame(tryFrame([]byte("two")))
	if err != nil || !complete {
		t.Fatalf("TryWriteFrame after the deadline passed: complete %v, %v", complete, err)
	}
	if f := cl.recv(); string(f.Payload) != "two" {
		t.Fatalf("got %q, want two", f.Payload)
	}
}

// TestTryWriteFrameClosed: after Close, TryWriteFrame writes nothing and
// says why.
func TestTryWriteFrameClosed(t *testing.T) {
	s := newTestServer(t, Options{})
	_, c := s.connect(t, "/")
	if err := c.Close(1000, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TryWriteFrame(tryFrame([]byte("x"))); !errors.Is(err, ErrClosed) && !errors.Is(err, os.ErrClosed) {
		t.Fatalf("TryWriteFrame after Close: %v, want ErrClosed", err)
	}
}

// TestTryWriteFrameBusy: while another write holds the connection, or
// the rest of an earlier frame waits for FlushFrame, TryWriteFrame writes
// nothing and says so, instead of waiting.
func TestTryWriteFrameBusy(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("TryWriteFrame is for unix sockets")
	}
	s := newTestServer(t, Options{})
	cl, c := s.connect(t, "/")
	c.wmu.Lock() // a write under way
	_, err := c.TryWriteFrame(tryFrame([]byte("held")))
	c.wmu.Unlock()
	if !errors.Is(err, ErrWriteBusy) {
		t.Fatalf("TryWriteFrame beside another write: %v, want ErrWriteBusy", err)
	}
	rest := getBuf(4)
	*rest = append((*rest)[:0], 0x81, 2, 'h', 'i') // a whole small frame, as a rest
	c.pending = rest
	if _, err := c.TryWriteFrame(tryFrame([]byte("after"))); !errors.Is(err, ErrWriteBusy) {
		t.Fatalf("TryWriteFrame with a rest to flush: %v, want ErrWriteBusy", err)
	}
	if err := c.FlushFrame(); err != nil {
		t.Fatal(err)
	}
	if complete, err := c.TryWriteFrame(tryFrame([]byte("now"))); err != nil || !complete {
		t.Fatalf("TryWriteFrame after the flush: %v, %v", complete, err)
	}
	for _, want := range []string{"hi", "now"} {
		if f := cl.recv(); string(f.Payload) != want {
			t.Fatalf("got %q, want %q", f.Payload, want)
		}
	}
}
