package gyre

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre/protocol"
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
