package hooks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// ErrClosed is what Deliver returns once the queue is closed: its events
// may not have been delivered.
var ErrClosed = errors.New("hooks: queue closed")

// QueueConfig describes a Queue. The zero value of every field but Name
// has a default.
type QueueConfig struct {
	// Name identifies the queue (its proxy) in logs.
	Name string
	// MaxBatch bounds the events of one request; zero means 100.
	MaxBatch int
	// Linger is how long a batch smaller than MaxBatch waits for more
	// events before it is sent, counted from its oldest event's Deliver
	// (events that queued behind a longer request go at once); zero
	// means 5ms, a negative value sends at once.
	Linger time.Duration
	// MaxEvents bounds the events queued; those a Deliver brings beyond
	// it are dropped (DropQueueFull). Zero means 10,000.
	MaxEvents int
	// MaxAge bounds how long an event waits, counted from its Deliver:
	// past it, the event is dropped (DropMaxAge) rather than sent again.
	// Zero means five minutes.
	MaxAge time.Duration
	// MinBackoff and MaxBackoff bound the wait before a failed request
	// is sent again, doubling from MinBackoff with each failure in a row
	// and jittered down by up to half; zero means 200ms and 10s.
	MinBackoff, MaxBackoff time.Duration
	// Recent is how many events, and how many failures, Recent keeps;
	// zero means 100.
	Recent int
	// Logger gets the lines of failing and dropping; nil logs nothing.
	Logger *slog.Logger
	// Observer, when set, is told what the queue does, for metrics.
	Observer Observer
}

// Queue delivers events to one backend through a Sender: in batches, one
// request at a time so that the backend gets them in the order they were
// queued, each batch sent again after a failure until the backend
// accepts it or its events are dropped. Its methods are safe for
// concurrent use.
type Queue struct {
	name                   string
	send                   Sender
	maxBatch, maxEvents    int
	linger, maxAge         time.Duration
	minBackoff, maxBackoff time.Duration
	log                    *slog.Logger
	obs                    Observer
	recent                 *ring

	ctx    context.Context // cancelled by Close, ends the request in flight
	cancel context.CancelFunc
	wake   chan struct{} // events were queued
	done   chan struct{} // the sending loop returned

	mu sync.Mutex
	// items are the events queued, oldest first; the first inflight of
	// them are in the request being sent.
	items    []item
	inflight int
	closed   bool
	// failures counts the failed requests in a row, since failStart;
	// lastErr is the latest one's error. Written by the sending loop.
	failures  int
	failStart time.Time
	lastErr   error
	// dropping is set from the first drop (at dropStart) to the next
	// delivery; dropped counts the events dropped meanwhile.
	dropping  bool
	dropStart time.Time
	dropped   int
	// lines are log lines to write once mu is released; then the Deliver
	// calls of released are told, so that a Deliver returns after the
	// lines and observer calls of its events.
	lines    []logLine
	released []*ticket

	// logMu keeps the lines in the order they were made.
	logMu sync.Mutex
}

// item is a queued event, with the Deliver call waiting for it.
type item struct {
	ev     Event
	t      *ticket // nil for an event dropped before being queued
	queued time.Time
}

// ticket is one Deliver call waiting for its events. Guarded by the
// queue's mu.
type ticket struct {
	pending  int // events neither delivered nor dropped
	done     chan struct{}
	err      error
	finished bool
}

// finishLocked ends t's wait with err, once unlock runs.
func (q *Queue) finishLocked(t *ticket, err error) {
	if !t.finished {
		t.finished, t.err = true, err
		q.released = append(q.released, t)
	}
}

// settleLocked counts one of t's events delivered or dropped.
func (q *Queue) settleLocked(t *ticket) {
	if t.finished {
		return
	}
	t.pending--
	if t.pending <= 0 {
		q.finishLocked(t, nil)
	}
}

type logLine struct {
	level slog.Level
	msg   string
	attrs []any
}

// NewQueue returns a queue sending through s, and starts its sending
// loop; Close stops it.
func NewQueue(s Sender, cfg QueueConfig) *Queue {
	q := &Queue{
		name: cfg.Name, send: s,
		maxBatch: cfg.MaxBatch, maxEvents: cfg.MaxEvents,
		linger: cfg.Linger, maxAge: cfg.MaxAge,
		minBackoff: cfg.MinBackoff, maxBackoff: cfg.MaxBackoff,
		log: cfg.Logger, obs: cfg.Observer,
		wake: make(chan struct{}, 1), done: make(chan struct{}),
	}
	if q.maxBatch <= 0 {
		q.maxBatch = 100
	}
	if q.maxEvents <= 0 {
		q.maxEvents = 10_000
	}
	if q.linger == 0 {
		q.linger = 5 * time.Millisecond
	}
	if q.maxAge <= 0 {
		q.maxAge = 5 * time.Minute
	}
	if q.minBackoff <= 0 {
		q.minBackoff = 200 * time.Millisecond
	}
	if q.maxBackoff <= 0 {
		q.maxBackoff = 10 * time.Second
	}
	q.maxBackoff = max(q.maxBackoff, q.minBackoff)
	if q.log == nil {
		q.log = slog.New(slog.DiscardHandler)
	}
	if q.obs == nil {
		q.obs = noObserver{}
	}
	size := cfg.Recent
	if size <= 0 {
		size = 100
	}
	q.recent = newRing(size)
	q.ctx, q.cancel = context.WithCancel(context.Background())
	go q.run()
	return q
}

// Deliver queues events, in order after those queued before, and waits
// until each is delivered or dropped: it returns nil then, so that a
// caller keeping the events in a durable log can advance past them. The
// events that do not fit in the queue are dropped at once.
//
// When ctx ends first, the events not yet in a request are taken out of
// the queue and Deliver returns ctx's error: the caller hands them over
// again later (a request in flight may still deliver some, and the
// backend then gets those twice, with the same IDs). After Close it
// returns ErrClosed.
func (q *Queue) Deliver(ctx context.Context, events []Event) error {
	if len(events) == 0 {
		return nil
	}
	for i := range events {
		if k := events[i].Kind; k != KindChannel && k != KindUser {
			return fmt.Errorf("hooks: %s: event %q: unknown kind %d", q.name, events[i].ID, k)
		}
	}
	t := &ticket{done: make(chan struct{})}
	now := time.Now()
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return ErrClosed
	}
	n := min(len(events), max(q.maxEvents-len(q.items), 0))
	t.pending = n
	for _, e := range events[:n] {
		q.items = append(q.items, item{ev: e, t: t, queued: now})
	}
	if n < len(events) {
		over := make([]item, 0, len(events)-n)
		for _, e := range events[n:] {
			over = append(over, item{ev: e, queued: now})
		}
		q.dropLocked(over, DropQueueFull)
	}
	if n == 0 {
		q.finishLocked(t, nil)
	}
	q.obs.QueueLength(len(q.items))
	q.unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	select {
	case <-t.done:
		return t.err
	case <-ctx.Done():
	}
	q.mu.Lock()
	defer q.unlock()
	if t.finished {
		return t.err
	}
	q.finishLocked(t, ctx.Err())
	q.withdrawLocked(t)
	return fmt.Errorf("hooks: %s: %w", q.name, ctx.Err())
}

// withdrawLocked takes the events of t that are not in flight out of the
// queue.
func (q *Queue) withdrawLocked(t *ticket) {
	kept := q.items[:q.inflight]
	for _, it := range q.items[q.inflight:] {
		if it.t != t {
			kept = append(kept, it)
		}
	}
	clear(q.items[len(kept):])
	q.items = kept
	q.obs.QueueLength(len(q.items))
}

// Len is the number of events queued, those in flight included.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

// Recent returns the latest events delivered or dropped and the latest
// failed requests, newest first.
func (q *Queue) Recent() []Record { return q.recent.records() }

// Close stops the queue: the request in flight is abandoned and every
// Deliver waiting returns ErrClosed.
func (q *Queue) Close() error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		<-q.done
		return nil
	}
	q.closed = true
	q.mu.Unlock()
	q.cancel()
	<-q.done
	q.mu.Lock()
	for _, it := range q.items {
		q.finishLocked(it.t, ErrClosed)
	}
	q.items, q.inflight = nil, 0
	q.obs.QueueLength(0)
	if q.dropping {
		q.endDroppingLocked(time.Now(), "closed", true)
	}
	q.unlock()
	return nil
}

// run is the sending loop: one request at a time, the oldest events
// first.
func (q *Queue) run() {
	defer close(q.done)
	for {
		if !q.waitItems() {
			return
		}
		if q.failures == 0 {
			q.waitLinger()
		}
		batch := q.take()
		if batch == nil {
			continue
		}
		start := time.Now()
		err := q.send.Send(q.ctx, batch)
		if q.ctx.Err() != nil {
			return
		}
		if err == nil {
			q.delivered(time.Since(start))
			continue
		}
		q.failed(batch, err)
		if !q.backoff() {
			return
		}
	}
}

// waitItems waits until events are queued; false once closed.
func (q *Queue) waitItems() bool {
	for {
		q.mu.Lock()
		n, closed := len(q.items), q.closed
		q.mu.Unlock()
		if closed {
			return false
		}
		if n > 0 {
			return true
		}
		select {
		case <-q.wake:
		case <-q.ctx.Done():
			return false
		}
	}
}

// waitLinger waits until the oldest event has lingered, or a batch is
// full.
func (q *Queue) waitLinger() {
	if q.linger < 0 {
		return
	}
	for {
		q.mu.Lock()
		if len(q.items) == 0 || len(q.items) >= q.maxBatch {
			q.mu.Unlock()
			return
		}
		wait := time.Until(q.items[0].queued.Add(q.linger))
		q.mu.Unlock()
		if wait <= 0 {
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
			return
		case <-q.wake:
			t.Stop()
		case <-q.ctx.Done():
			t.Stop()
			return
		}
	}
}

// take drops the events past their age and returns the next batch: the
// oldest events, of one kind, at most maxBatch. Nil when none is left.
func (q *Queue) take() []Event {
	q.mu.Lock()
	defer q.unlock()
	q.expireLocked(time.Now())
	if len(q.items) == 0 {
		return nil
	}
	kind := q.items[0].ev.Kind
	n := 0
	for n < len(q.items) && n < q.maxBatch && q.items[n].ev.Kind == kind {
		n++
	}
	batch := make([]Event, n)
	for i := range n {
		batch[i] = q.items[i].ev
	}
	q.inflight = n
	return batch
}

// expireLocked drops the events past their age and returns when the
// oldest of the rest will be (zero if none is left). Only called with no
// request in flight.
func (q *Queue) expireLocked(now time.Time) time.Time {
	i := 0
	for i < len(q.items) && !now.Before(q.items[i].queued.Add(q.maxAge)) {
		i++
	}
	if i > 0 {
		q.dropLocked(q.items[:i], DropMaxAge)
		q.removeHeadLocked(i)
	}
	if len(q.items) == 0 {
		return time.Time{}
	}
	return q.items[0].queued.Add(q.maxAge)
}

// removeHeadLocked removes the n oldest events.
func (q *Queue) removeHeadLocked(n int) {
	clear(q.items[:n])
	q.items = q.items[n:]
	if len(q.items) == 0 {
		// Let the backing array go rather than creep along it.
		q.items = nil
	}
	q.obs.QueueLength(len(q.items))
}

// delivered settles the batch in flight, which the backend accepted.
func (q *Queue) delivered(d time.Duration) {
	q.mu.Lock()
	defer q.unlock()
	now := time.Now()
	sent := q.items[:q.inflight]
	q.obs.Delivered(sent[0].ev.Kind, len(sent), d)
	for _, it := range sent {
		q.settleLocked(it.t)
		q.recent.addEvent(Record{Time: now, Outcome: Delivered, Event: it.ev})
	}
	q.removeHeadLocked(q.inflight)
	q.inflight = 0
	switch {
	case q.dropping:
		q.endDroppingLocked(now, "", false)
	case q.failures > 0:
		q.addLine(slog.LevelInfo, "hooks: delivering again", "proxy", q.name,
			"failures", q.failures, "for", now.Sub(q.failStart).Round(time.Millisecond))
	}
	q.failures, q.lastErr = 0, nil
}

// failed records the failure of the batch in flight, whose events stay
// at the head of the queue to be sent again.
func (q *Queue) failed(batch []Event, err error) {
	q.mu.Lock()
	defer q.unlock()
	now := time.Now()
	reason := failReason(err)
	kind := batch[0].Kind
	q.failures++
	q.lastErr = err
	if q.failures == 1 {
		q.failStart = now
		q.addLine(slog.LevelWarn, "hooks: delivery failed, sending again with back-off", "proxy", q.name,
			"kind", kind.String(), "events", len(batch), "reason", reason, "error", err)
	} else {
		q.addLine(slog.LevelDebug, "hooks: delivery failed again", "proxy", q.name,
			"kind", kind.String(), "events", len(batch), "reason", reason, "error", err, "failures", q.failures)
	}
	q.obs.Failed(kind, reason)
	q.recent.addFailure(Record{
		Time: now, Outcome: Failed, Event: batch[0], Batch: len(batch),
		Attempt: q.failures, Reason: reason, Error: err.Error(),
	})
	// Events whose Deliver gave up while they were in flight are handed
	// over again by its caller: they need not be sent twice more.
	kept := q.items[:0]
	for i, it := range q.items {
		if i >= q.inflight || !it.t.finished {
			kept = append(kept, it)
		}
	}
	clear(q.items[len(kept):])
	q.items = kept
	q.inflight = 0
	q.obs.QueueLength(len(q.items))
}

// backoff waits before the batch that failed is sent again, dropping the
// events that pass their age meanwhile; false once closed.
func (q *Queue) backoff() bool {
	until := time.Now().Add(q.delay(q.failures))
	for {
		q.mu.Lock()
		now := time.Now()
		next := q.expireLocked(now)
		q.unlock()
		if !now.Before(until) {
			return true
		}
		wait := until.Sub(now)
		if !next.IsZero() {
			wait = min(wait, next.Sub(now))
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-q.wake:
			// New events may pass their age before the back-off ends.
			t.Stop()
		case <-q.ctx.Done():
			t.Stop()
			return false
		}
	}
}

// delay is the back-off after failures in a row: doubling from
// minBackoff up to maxBackoff, less a random part of up to half, so that
// the queues of many nodes do not retry in step.
func (q *Queue) delay(failures int) time.Duration {
	d := q.minBackoff
	for i := 1; i < failures && d < q.maxBackoff; i++ {
		d *= 2
	}
	d = min(d, q.maxBackoff)
	return d/2 + rand.N(d/2+1)
}

// dropLocked counts, records and logs the drop of items (not removing
// them from the queue).
func (q *Queue) dropLocked(items []item, reason string) {
	now := time.Now()
	var channels, users int
	for _, it := range items {
		if it.t != nil {
			q.settleLocked(it.t)
		}
		if it.ev.Kind == KindChannel {
			channels++
		} else {
			users++
		}
		q.recent.addEvent(Record{Time: now, Outcome: Dropped, Event: it.ev, Reason: reason})
	}
	if channels > 0 {
		q.obs.Dropped(KindChannel, reason, channels)
	}
	if users > 0 {
		q.obs.Dropped(KindUser, reason, users)
	}
	q.dropped += len(items)
	if q.dropping {
		return
	}
	q.dropping, q.dropStart = true, now
	attrs := []any{"proxy", q.name, "reason", reason, "events", len(items)}
	if reason == DropQueueFull {
		attrs = append(attrs, "max_events", q.maxEvents)
	} else {
		attrs = append(attrs, "max_age", q.maxAge)
	}
	if q.lastErr != nil {
		attrs = append(attrs, "error", q.lastErr)
	}
	q.addLine(slog.LevelWarn, "hooks: dropping events", attrs...)
}

// endDroppingLocked ends the dropping episode with its one closing line.
func (q *Queue) endDroppingLocked(now time.Time, extraKey string, extraValue any) {
	attrs := []any{"proxy", q.name, "dropped", q.dropped, "for", now.Sub(q.dropStart).Round(time.Millisecond)}
	if extraKey != "" {
		attrs = append(attrs, extraKey, extraValue)
	}
	q.addLine(slog.LevelWarn, "hooks: stopped dropping events", attrs...)
	q.dropping, q.dropped = false, 0
}

// addLine keeps a log line to write once mu is released.
func (q *Queue) addLine(level slog.Level, msg string, attrs ...any) {
	if q.log.Enabled(context.Background(), level) {
		q.lines = append(q.lines, logLine{level: level, msg: msg, attrs: attrs})
	}
}

// unlock releases mu and writes the lines kept meanwhile, in order with
// those of other goroutines.
func (q *Queue) unlock() {
	if len(q.lines) == 0 && len(q.released) == 0 {
		q.mu.Unlock()
		return
	}
	lines, released := q.lines, q.released
	q.lines, q.released = nil, nil
	q.logMu.Lock()
	q.mu.Unlock()
	for _, l := range lines {
		q.log.Log(context.Background(), l.level, l.msg, l.attrs...)
	}
	q.logMu.Unlock()
	for _, t := range released {
		close(t.done)
	}
}
