package gyre

import (
	"errors"
	"runtime"
	"sync"
	"unsafe"

	"github.com/gyrehq/gyre/protocol"
	"github.com/gyrehq/gyre/transport/websocket"
)

// framePool holds the buffers frames are joined into, shared by all
// connections so that an idle connection holds none.
var framePool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// writer queues framed messages for one connection and writes everything
// pending as one frame in one write. The queue is bounded in bytes.
type writer struct {
	mu sync.Mutex
	// queue holds the messages as strings, 16 bytes an entry instead of
	// 24: a fan-out appends to a thousand queues in turn, and the cache
	// lines those appends touch are most of the cost of queuing. A
	// message is never modified once queued (one encoding is shared by
	// every subscriber of a publication), so it is not copied.
	queue   []string
	spare   []string
	size    int
	max     int
	running bool
	closed  bool
	// yieldFirst: the goroutine lets its starter go on before writing.
	// Set only while no goroutine runs.
	yieldFirst bool
	// closing, when set, is sent once the queue is drained.
	closing *Disconnect
	// heldBy is the wake list of whoever queued messages without waking
	// the writer and will wake it when done.
	heldBy *wakeList
	// runFn is w.run as a func value made once: "go w.runFn()" would
	// allocate a closure every time an idle connection wakes up.
	runFn func()

	proto     protocol.Type
	transport Transport
	// frames, set on a connection with permessage-deflate, takes the
	// queue: it holds whole frames then, not messages to join into one.
	frames frameTransport
	// try, when set, lets a wake list's goroutines write to the
	// connection (writeNow) instead of the writer's own goroutine.
	try tryTransport
	// flushFirst: the goroutine starts by writing the rest of a frame
	// writeNow could not complete. Set only while no goroutine runs.
	flushFirst bool
	// onWriteError is called (once, from the goroutine that wrote) when
	// a write fails.
	onWriteError func(error)
	// closeTransport closes the transport; the client makes it idempotent.
	closeTransport func(*Disconnect)
	obs            Observer
}

func newWriter(t Transport, max int, onWriteError func(error), closeTransport func(*Disconnect), obs Observer) *writer {
	w := &writer{
		closeTransport: closeTransport,
		obs:            obs,
		max:            max,
		proto:          t.Protocol(),
		transport:      t,
		onWriteError:   onWriteError,
	}
	if ft, ok := t.(frameTransport); ok && ft.Compression() != nil {
		w.frames = ft
	} else if tt, ok := t.(tryTransport); ok && tt.CanTryWrite() {
		w.try = tt
	}
	w.runFn = w.run
	return w
}

// enqueueResult is what became of messages given to a writer.
type enqueueResult uint8

const (
	enqueued enqueueResult = iota
	// enqueueFull: the queue would exceed its bound; the caller then
	// disconnects the client as slow.
	enqueueFull
	// enqueueClosed: the writer is closed or closing, and dropped them.
	enqueueClosed
)

// enqueue adds one framed message.
//
// With l set, the writer is not woken but added to l, whose owner wakes
// it when done queuing, so that what it queues leaves in one write. A
// writer already held by another list, or whose queue is a quarter full,
// is woken at once.
func (w *writer) enqueue(msg []byte, l *wakeList) enqueueResult {
	w.mu.Lock()
	if w.closed || w.closing != nil {
		w.mu.Unlock()
		return enqueueClosed
	}
	if w.size+len(msg) > w.max {
		w.mu.Unlock()
		return enqueueFull
	}
	w.queue = append(w.queue, unsafe.String(unsafe.SliceData(msg), len(msg)))
	w.size += len(msg)
	w.holdOrWakeLocked(l)
	return enqueued
}

// enqueueRun adds a run of framed messages, size bytes in all, as enqueue
// would one by one but under one hold of the lock. msgs is not kept.
func (w *writer) enqueueRun(msgs []string, size int, l *wakeList) enqueueResult {
	w.mu.Lock()
	if w.closed || w.closing != nil {
		w.mu.Unlock()
		return enqueueClosed
	}
	if w.size+size > w.max {
		w.mu.Unlock()
		return enqueueFull
	}
	w.queue = append(w.queue, msgs...)
	w.size += size
	w.holdOrWakeLocked(l)
	return enqueued
}

// holdOrWakeLocked leaves the writer to l to wake, or wakes it now, and
// unlocks w.mu.
func (w *writer) holdOrWakeLocked(l *wakeList) {
	if l != nil && w.size <= w.max/4 {
		switch w.heldBy {
		case l:
			w.mu.Unlock()
			return
		case nil:
			w.heldBy = l
			w.mu.Unlock()
			l.writers = append(l.writers, w)
			return
		}
	}
	w.wakeLocked()
}

// wakeList holds writers that were queued to and not woken: whoever
// queues through it wakes them all when done (wakeAll), so that each
// writes everything it was given in one write. A wake list is for one
// goroutine at a time.
type wakeList struct{ writers []*writer }

// tryChunk is how many connections one goroutine of wakeAll writes to:
// enough that starting it costs little per connection, few enough that
// a fan-out to thousands still has a goroutine for each processor.
const tryChunk = 64

// tryChunks holds the slices wakeAll hands its goroutines.
var tryChunks = sync.Pool{New: func() any { s := make([]*writer, 0, tryChunk); return &s }}

// wakeAll wakes the writers of l and empties it. Those that can write
// without waiting (writer.try) are written to by goroutines of wakeAll,
// tryChunk connections each; the others start their own.
func (l *wakeList) wakeAll() {
	var chunk *[]*writer
	for _, w := range l.writers {
		if !w.release(l) {
			continue
		}
		if chunk == nil {
			chunk = tryChunks.Get().(*[]*writer)
		}
		*chunk = append(*chunk, w)
		if len(*chunk) == tryChunk {
			go writeEach(chunk)
			chunk = nil
		}
	}
	if chunk != nil {
		go writeEach(chunk)
	}
	clear(l.writers)
	l.writers = l.writers[:0]
}

// writeEach writes to each writer in ws, which wakeAll claimed for it.
func writeEach(ws *[]*writer) {
	for _, w := range *ws {
		w.writeNow()
	}
	clear(*ws)
	*ws = (*ws)[:0]
	tryChunks.Put(ws)
}

// release wakes a writer that l held. It reports true when it claimed the
// writer for its caller to write with writeNow instead.
func (w *writer) release(l *wakeList) bool {
	w.mu.Lock()
	if w.heldBy == l {
		w.heldBy = nil
	}
	if w.closed || len(w.queue) == 0 && w.closing == nil {
		w.mu.Unlock()
		return false
	}
	if w.try != nil && !w.running && w.closing == nil {
		w.running = true
		w.mu.Unlock()
		return true
	}
	// Its holder is done queuing for this write: nothing to wait for.
	w.startLocked(false)
	return false
}

// wakeLocked starts the writer goroutine unless it runs, and unlocks
// w.mu. A running one finds what was queued before it leaves: it only
// leaves after finding the queue empty under the lock.
func (w *writer) wakeLocked() { w.startLocked(true) }

// startLocked is wakeLocked; with yield, a goroutine it starts first lets
// the one that queued go on queuing.
func (w *writer) startLocked(yield bool) {
	if w.running {
		w.mu.Unlock()
		return
	}
	w.running = true
	w.yieldFirst = yield
	w.mu.Unlock()
	go w.runFn()
}

// closeAfterFlush writes what is queued, then closes the transport with d.
func (w *writer) closeAfterFlush(d *Disconnect) {
	w.mu.Lock()
	if w.closing != nil {
		w.mu.Unlock()
		return
	}
	if w.closed {
		// A write failed (or close ran): nothing will be written, and
		// nobody else may be left to close the transport. The write
		// error's own close is a no-op when this close got there first,
		// and a transport never closed would keep the connection counted
		// as live, which Shutdown waits for.
		w.mu.Unlock()
		w.closeTransport(d)
		return
	}
	w.closing = d
	w.wakeLocked()
}

// close drops whatever is queued; no more writes happen after the current
// one.
func (w *writer) close() {
	w.mu.Lock()
	w.closed = true
	clear(w.queue)
	w.queue = w.queue[:0]
	w.size = 0
	w.mu.Unlock()
}

// write sends a batch of queued messages in one write: joined into one
// frame, or with compression, as the frames they are.
func (w *writer) write(batch []string) error {
	if w.frames != nil {
		err := w.frames.WriteFrames(batch)
		size := 0
		for _, f := range batch {
			size += len(f)
		}
		w.obs.FrameWritten(len(batch), size)
		return err
	}
	bp := framePool.Get().(*[]byte)
	frame := protocol.JoinFrame((*bp)[:0], w.proto, batch)
	err := w.transport.WriteFrame(frame)
	w.obs.FrameWritten(len(batch), len(frame))
	if cap(frame) <= 64<<10 {
		*bp = frame[:0]
		framePool.Put(bp)
	}
	return err
}

// run is the writer goroutine: it exists only while there is something
// to write, so that an idle connection has none.
func (w *writer) run() {
	if w.flushFirst {
		w.flushFirst = false
		if err := w.try.FlushFrame(); err != nil {
			w.failed(err)
			return
		}
	} else if w.yieldFirst {
		// Let the broadcaster that started us queue more first: one
		// write then carries more messages, and syscalls are most of
		// the cost. A wake list wakes its writers when it is done
		// queuing; yielding then only sends a thousand goroutines
		// through the global run queue.
		runtime.Gosched()
	}
	w.drain()
}

// drain writes until the queue is empty and then ends the goroutine's
// turn.
func (w *writer) drain() {
	var written []string // the last batch, kept as the next queue's array
	for {
		batch := w.next(written)
		if batch == nil {
			return
		}
		err := w.write(batch)
		clear(batch)
		written = batch
		if err != nil {
			w.failed(err)
			return
		}
	}
}

// writeNow writes what is queued, for a writer release claimed, without
// waiting: one frame at most, so that a connection that keeps getting
// messages does not keep the goroutine from the others it writes to.
// Whatever may wait (the rest of a frame the socket did not take, what
// was queued since, a write failure's close, a close after the queue) is
// left to a goroutine of the writer's own.
func (w *writer) writeNow() {
	batch := w.next(nil) // never closes: release claimed a queue to write
	if batch == nil {
		return
	}
	bp := framePool.Get().(*[]byte)
	buf := append((*bp)[:0], make([]byte, websocket.FrameHeaderRoom)...)
	buf = protocol.JoinFrame(buf, w.proto, batch)
	complete, err := w.try.TryWriteFrame(buf)
	if err == nil {
		w.obs.FrameWritten(len(batch), len(buf)-websocket.FrameHeaderRoom)
	}
	if cap(buf) <= 64<<10 {
		*bp = buf[:0]
		framePool.Put(bp)
	}
	if errors.Is(err, websocket.ErrWriteBusy) {
		go w.writeThenDrain(batch)
		return
	}
	clear(batch)
	if err != nil {
		go w.failed(err)
		return
	}
	w.mu.Lock()
	w.spare = batch[:0]
	if complete && (w.closed || len(w.queue) == 0 && w.closing == nil) {
		w.running = false
		w.mu.Unlock()
		return
	}
	w.flushFirst, w.yieldFirst = !complete, false
	w.mu.Unlock()
	go w.runFn()
}

// writeThenDrain writes batch, which writeNow could not, and goes on as
// the writer's goroutine.
func (w *writer) writeThenDrain(batch []string) {
	err := w.write(batch)
	clear(batch)
	if err != nil {
		w.failed(err)
		return
	}
	w.drain()
}

// next takes the queue to write, keeping written, the last batch written,
// as the next queue's array. It returns nil when there is nothing left,
// ending the writer's turn: running is cleared under the lock that found
// the queue empty, so an enqueue after that starts a new one.
func (w *writer) next(written []string) []string {
	w.mu.Lock()
	if written != nil {
		w.spare = written[:0]
	}
	if w.closed {
		w.running = false
		w.mu.Unlock()
		return nil
	}
	if len(w.queue) == 0 {
		w.running = false
		d := w.closing
		if d != nil {
			w.closed = true
		}
		w.mu.Unlock()
		if d != nil {
			w.closeTransport(d)
		}
		return nil
	}
	batch := w.queue
	w.queue = w.spare[:0]
	w.size = 0
	w.mu.Unlock()
	return batch
}

// failed ends the writer's turn after a failed write.
func (w *writer) failed(err error) {
	w.mu.Lock()
	w.closed = true
	w.running = false
	d := w.closing
	w.mu.Unlock()
	if d != nil {
		// The client is already closing: finish that close.
		w.closeTransport(d)
		return
	}
	w.onWriteError(err)
}
