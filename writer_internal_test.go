package gyre

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/transport/websocket"
)

// frameRecorder is a JSON transport that keeps the frames written to it.
type frameRecorder struct {
	mu     sync.Mutex
	frames [][]byte
	wrote  chan struct{}
}

func newFrameRecorder() *frameRecorder { return &frameRecorder{wrote: make(chan struct{}, 100)} }

func (r *frameRecorder) Name() string            { return "recorder" }
func (r *frameRecorder) Protocol() protocol.Type { return protocol.TypeJSON }
func (r *frameRecorder) Unidirectional() bool    { return false }
func (r *frameRecorder) Close(*Disconnect) error { return nil }
func (r *frameRecorder) WriteFrame(f []byte) error {
	r.mu.Lock()
	r.frames = append(r.frames, bytes.Clone(f))
	r.mu.Unlock()
	r.wrote <- struct{}{}
	return nil
}

// messages waits for frames until they hold n messages in all, and
// returns the frames.
func (r *frameRecorder) messages(t *testing.T, n int) [][]byte {
	t.Helper()
	for {
		r.mu.Lock()
		got := 0
		for _, f := range r.frames {
			got += bytes.Count(f, []byte("\n")) + 1
		}
		frames := r.frames
		r.mu.Unlock()
		if got >= n {
			return frames
		}
		select {
		case <-r.wrote:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d messages written", got, n)
		}
	}
}

// messagesOf is the messages the frames hold, in order (a frame joins
// several with newlines).
func messagesOf(frames [][]byte) []string {
	var got []string
	for _, f := range frames {
		got = append(got, strings.Split(string(f), "\n")...)
	}
	return got
}

func newTestWriter(tr Transport, max int) *writer {
	return newWriter(tr, max, func(error) {}, func(*Disconnect) {}, NopObserver{})
}

// TestWakeListWakesOnce: what is queued through a wake list leaves in one
// write when the list wakes its writers, in the order it was queued.
func TestWakeListWakesOnce(t *testing.T) {
	tr := newFrameRecorder()
	w := newTestWriter(tr, 1<<20)
	l := &wakeList{}
	for i := range 50 {
		if w.enqueue([]byte{'a' + byte(i%26)}, l) != enqueued {
			t.Fatal("queue full")
		}
	}
	if len(l.writers) != 1 {
		t.Fatalf("wake list holds %d writers, want 1", len(l.writers))
	}
	l.wakeAll()
	frames := tr.messages(t, 50)
	if len(frames) != 1 {
		t.Fatalf("%d frames, want 1", len(frames))
	}
	want := []byte("a\nb\nc\nd\ne")
	if !bytes.HasPrefix(frames[0], want) {
		t.Fatalf("frame starts %q, want %q", frames[0][:len(want)], want)
	}
	if w.heldBy != nil {
		t.Fatal("writer still held after wakeAll")
	}
}

// TestWakeListQuarterQueue: a wake list does not hold back more than a
// quarter of a connection's queue.
func TestWakeListQuarterQueue(t *testing.T) {
	tr := newFrameRecorder()
	w := newTestWriter(tr, 400)
	l := &wakeList{}
	msg := bytes.Repeat([]byte("x"), 50)
	w.enqueue(msg, l)
	w.enqueue(msg, l) // 100 bytes: a quarter, still held
	w.mu.Lock()
	running := w.running
	w.mu.Unlock()
	if running {
		t.Fatal("writer woken within a quarter of its queue")
	}
	w.enqueue(msg, l) // past a quarter: woken now
	tr.messages(t, 3)
	l.wakeAll()
}

// TestWakeListOtherList: a writer held by one wake list is woken at once
// by a message queued through another, so that no one waits for
// another's wakeAll.
func TestWakeListOtherList(t *testing.T) {
	tr := newFrameRecorder()
	w := newTestWriter(tr, 1<<20)
	l1, l2 := &wakeList{}, &wakeList{}
	w.enqueue([]byte("1"), l1)
	w.enqueue([]byte("2"), l2)
	tr.messages(t, 2)
	if len(l2.writers) != 0 {
		t.Fatal("second wake list holds the writer too")
	}
	l1.wakeAll()
}

// failingTransport fails every write.
type failingTransport struct{}

func (failingTransport) Name() string            { return "failing" }
func (failingTransport) Protocol() protocol.Type { return protocol.TypeJSON }
func (failingTransport) Unidirectional() bool    { return false }
func (failingTransport) Close(*Disconnect) error { return nil }
func (failingTransport) WriteFrame([]byte) error { return errors.New("connection reset") }

// TestCloseAfterFailedWrite: a write fails, and the client's close with a
// flush (a disconnect) comes before the write error's own close, which is
// then a no-op. The writer has stopped and will write nothing more; the
// transport must still be closed, or the connection stays counted as live
// and Shutdown waits for it until its deadline.
func TestCloseAfterFailedWrite(t *testing.T) {
	writeFailed := make(chan struct{})
	var closedWith []*Disconnect
	w := newWriter(failingTransport{}, 1<<20, func(error) { close(writeFailed) },
		func(d *Disconnect) { closedWith = append(closedWith, d) }, NopObserver{})
	w.enqueue([]byte(`{"push":{}}`), nil)
	<-writeFailed
	w.closeAfterFlush(DisconnectShutdown)
	if len(closedWith) != 1 || closedWith[0] != DisconnectShutdown {
		t.Fatalf("transport closed with %v, want once with %v", closedWith, DisconnectShutdown)
	}
}

// tryRecorder is a frameRecorder that can be written to without waiting
// (tryTransport). With stall set, the next TryWriteFrame takes nothing
// and leaves the frame for FlushFrame.
type tryRecorder struct {
	frameRecorder
	stall   bool
	busy    bool // the next TryWriteFrame finds another write under way
	onTry   func()
	pending []byte
	tries   int
	flushes int
	// misordered is set when something was written while a frame was
	// left for FlushFrame.
	misordered bool
}

func newTryRecorder() *tryRecorder {
	return &tryRecorder{frameRecorder: frameRecorder{wrote: make(chan struct{}, 1000)}}
}

func (r *tryRecorder) CanTryWrite() bool { return true }

func (r *tryRecorder) TryWriteFrame(f []byte) (bool, error) {
	payload := bytes.Clone(f[websocket.FrameHeaderRoom:])
	if r.onTry != nil {
		r.onTry()
		r.onTry = nil
	}
	r.mu.Lock()
	r.tries++
	if r.busy {
		r.busy = false
		r.mu.Unlock()
		return false, websocket.ErrWriteBusy
	}
	if r.pending != nil {
		r.misordered = true
	}
	if r.stall {
		r.stall, r.pending = false, payload
		r.mu.Unlock()
		return false, nil
	}
	r.frames = append(r.frames, payload)
	r.mu.Unlock()
	r.wrote <- struct{}{}
	return true, nil
}

func (r *tryRecorder) FlushFrame() error {
	r.mu.Lock()
	r.flushes++
	if r.pending != nil {
		r.frames = append(r.frames, r.pending)
		r.pending = nil
	}
	r.mu.Unlock()
	r.wrote <- struct{}{}
	return nil
}

func (r *tryRecorder) WriteFrame(f []byte) error {
	r.mu.Lock()
	if r.pending != nil {
		r.misordered = true
	}
	r.mu.Unlock()
	return r.frameRecorder.WriteFrame(f)
}

// TestWakeAllWritesWithoutWaiting: a wake list's writers on transports
// that can be written to without waiting are written to by wakeAll's
// goroutines, each once, everything queued in one frame.
func TestWakeAllWritesWithoutWaiting(t *testing.T) {
	l := &wakeList{}
	recs := make([]*tryRecorder, 3*tryChunk+5)
	for i := range recs {
		recs[i] = newTryRecorder()
		w := newTestWriter(recs[i], 1<<20)
		if w.try == nil {
			t.Fatal("writer does not use TryWriteFrame")
		}
		w.enqueue([]byte("a"), l)
		w.enqueue([]byte("b"), l)
	}
	l.wakeAll()
	for i, r := range recs {
		frames := r.messages(t, 2)
		r.mu.Lock()
		if len(frames) != 1 || string(frames[0]) != "a\nb" || r.tries != 1 {
			t.Errorf("connection %d: frames %q from %d tries, want one \"a\\nb\"", i, frames, r.tries)
		}
		r.mu.Unlock()
	}
}

// TestWriteNowLeavesRestToGoroutine: a frame the socket does not take at
// once is finished by the writer's goroutine (FlushFrame) before anything
// queued after it is written, in order.
func TestWriteNowLeavesRestToGoroutine(t *testing.T) {
	r := newTryRecorder()
	r.stall = true
	w := newTestWriter(r, 1<<20)
	l := &wakeList{}
	w.enqueue([]byte("1"), l)
	l.wakeAll()
	for i := 2; i <= 20; i++ {
		w.enqueue([]byte(strconv.Itoa(i)), nil)
	}
	got := messagesOf(r.messages(t, 20))
	for i, m := range got {
		if m != strconv.Itoa(i+1) {
			t.Fatalf("messages %q, want 1 to 20 in order", got)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.flushes != 1 || r.misordered {
		t.Fatalf("%d flushes, misordered %v; want the rest flushed once, first", r.flushes, r.misordered)
	}
}

// erringTry fails TryWriteFrame.
type erringTry struct{ failingTransport }

func (erringTry) CanTryWrite() bool                  { return true }
func (erringTry) TryWriteFrame([]byte) (bool, error) { return false, errors.New("connection reset") }
func (erringTry) FlushFrame() error                  { return errors.New("nothing to flush") }

// TestWriteNowError: a failed TryWriteFrame closes the writer and tells
// the client once.
func TestWriteNowError(t *testing.T) {
	failed := make(chan error, 2)
	w := newWriter(erringTry{}, 1<<20, func(err error) { failed <- err }, func(*Disconnect) {}, NopObserver{})
	l := &wakeList{}
	w.enqueue([]byte("x"), l)
	l.wakeAll()
	select {
	case <-failed:
	case <-time.After(10 * time.Second):
		t.Fatal("write error not reported")
	}
	if w.enqueue([]byte("y"), nil) != enqueueClosed {
		t.Fatal("writer takes messages after a failed write")
	}
	select {
	case err := <-failed:
		t.Fatalf("write error reported twice: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
}

// TestWriteNowBusy: a connection whose socket another write holds gets
// what writeNow could not write from its own goroutine, in order with
// what is queued after it.
func TestWriteNowBusy(t *testing.T) {
	r := newTryRecorder()
	r.busy = true
	w := newTestWriter(r, 1<<20)
	l := &wakeList{}
	w.enqueue([]byte("1"), l)
	w.enqueue([]byte("2"), l)
	l.wakeAll()
	w.enqueue([]byte("3"), nil)
	got := messagesOf(r.messages(t, 3))
	if strings.Join(got, ",") != "1,2,3" {
		t.Fatalf("messages %q, want 1, 2, 3", got)
	}
}

// TestWriteNowOneFrame: writeNow writes one frame and leaves what was
// queued meanwhile to the writer's own goroutine, so that a connection
// that keeps getting messages cannot hold the goroutine of its chunk.
func TestWriteNowOneFrame(t *testing.T) {
	r := newTryRecorder()
	w := newTestWriter(r, 1<<20)
	r.onTry = func() { w.enqueue([]byte("2"), nil) } // queued while "1" is written
	l := &wakeList{}
	w.enqueue([]byte("1"), l)
	l.wakeAll()
	frames := r.messages(t, 2)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tries != 1 || len(frames) != 2 || string(frames[0]) != "1" || string(frames[1]) != "2" {
		t.Fatalf("%d tries, frames %q; want \"1\" tried, \"2\" written by the writer's goroutine", r.tries, frames)
	}
}
