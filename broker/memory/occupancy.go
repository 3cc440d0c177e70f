package memory

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gyrehq/gyre/broker"
)

// DefaultOccupancyBacklog is the number of events an OccupancyTracker
// keeps for its handler when OccupancyConfig.Backlog is zero.
const DefaultOccupancyBacklog = 100_000

// The pacing of an OccupancyTracker's delivery: at most occupancyBatch
// events per handler call; after a failed call, a wait that doubles from
// occupancyRetryMin up to occupancyRetryMax.
const (
	occupancyBatch    = 256
	occupancyRetryMin = 50 * time.Millisecond
	occupancyRetryMax = 5 * time.Second
)

// OccupancyConfig configures an OccupancyTracker. The zero value works.
type OccupancyConfig struct {
	// Backlog bounds the events waiting for the handler: past it the
	// oldest are dropped, counted (OccupancyDropped), with a Warn line
	// when dropping starts and an Info line with the count when the
	// handler has caught up. Zero means DefaultOccupancyBacklog.
	Backlog int
	// Logger receives the handler's errors and the drops. Nil discards.
	Logger *slog.Logger
}

// OccupancyTracker is a broker.OccupancyTracker for one node: every key
// it holds is held by the cluster, and it hands every transition to its
// own handler. It has no lease, the node being the whole cluster; what
// it keeps is lost with the process. Its methods are safe for
// concurrent use.
//
// Event IDs are a random prefix, made by NewOccupancyTracker, and a
// sequence number. Pending vacates wait in one queue per kind, in the
// order of their releases, which is the order of their ends since the
// delay of a kind is one.
type OccupancyTracker struct {
	cfg    OccupancyConfig
	log    *slog.Logger
	prefix string // of event IDs

	mu   sync.Mutex
	keys map[occupancyKey]*occupancyState
	// pending holds the releases whose delay runs, per kind, oldest
	// first; an entry whose gen no longer matches its key's was
	// cancelled.
	pending [3]occupancyQueue
	gen     uint64
	// events wait for the handler, oldest first; base is the sequence
	// number of events[0]. The handler's successful call forgets the
	// events up to the last it was given.
	events  []broker.OccupancyEvent
	base    uint64
	dropped int // events dropped since the backlog last emptied
	opts    broker.OccupancyOptions
	running bool
	closed  bool
	// droppedTotal counts every event dropped, for OccupancyDropped;
	// written under mu, read without.
	droppedTotal atomic.Uint64

	handler broker.OccupancyHandler
	// vacates and deliveries wake the loops: a release waits, events
	// were queued.
	vacates    chan struct{}
	deliveries chan struct{}
	stop       chan struct{}
	ctx        context.Context // the handler's; done at Close
	cancel     context.CancelFunc
	wg         sync.WaitGroup
}

var (
	_ broker.OccupancyTracker     = (*OccupancyTracker)(nil)
	_ broker.OccupancyDropCounter = (*OccupancyTracker)(nil)
)

type occupancyKey struct {
	kind broker.OccupancyKind
	key  string
}

// occupancyState is a key held, or released and waiting for its delay
// (gen set).
type occupancyState struct {
	held   bool
	info   []byte
	leftAt int64 // Unix ms of the release, while pending
	gen    uint64
}

type occupancyPending struct {
	key    occupancyKey
	leftAt int64
	gen    uint64
}

// occupancyQueue is a FIFO of pending releases.
type occupancyQueue struct {
	items []occupancyPending
	head  int
}

func (q *occupancyQueue) push(p occupancyPending) { q.items = append(q.items, p) }

func (q *occupancyQueue) peek() (occupancyPending, bool) {
	if q.head == len(q.items) {
		return occupancyPending{}, false
	}
	return q.items[q.head], true
}

func (q *occupancyQueue) pop() {
	q.items[q.head] = occupancyPending{}
	q.head++
	// Reuse the front once half the slice is spent.
	if q.head > 64 && q.head*2 >= len(q.items) {
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
}

// NewOccupancyTracker returns a tracker; RunOccupancy starts it.
func NewOccupancyTracker(cfg OccupancyConfig) (*OccupancyTracker, error) {
	if cfg.Backlog < 0 {
		return nil, fmt.Errorf("memory: OccupancyConfig.Backlog %d is negative", cfg.Backlog)
	}
	cfg.Backlog = orDefault(cfg.Backlog, DefaultOccupancyBacklog)
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var b [6]byte
	_, _ = rand.Read(b[:]) // never fails; it crashes the program instead
	ctx, cancel := context.WithCancel(context.Background())
	return &OccupancyTracker{
		cfg:        cfg,
		log:        log,
		prefix:     base64.RawURLEncoding.EncodeToString(b[:]) + "-",
		keys:       make(map[occupancyKey]*occupancyState),
		base:       1,
		vacates:    make(chan struct{}, 1),
		deliveries: make(chan struct{}, 1),
		stop:       make(chan struct{}),
		ctx:        ctx,
		cancel:     cancel,
	}, nil
}

// Hold marks key held. It never fails but for a bad key or a closed
// tracker.
func (t *OccupancyTracker) Hold(kind broker.OccupancyKind, key string, info []byte) error {
	if err := broker.CheckOccupancyKey(kind, key); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	k := occupancyKey{kind, key}
	s := t.keys[k]
	if s == nil {
		s = &occupancyState{}
		t.keys[k] = s
	}
	if s.held {
		return nil
	}
	s.held = true
	now := time.Now().UnixMilli()
	if s.gen != 0 {
		s.gen = 0
		if !t.due(kind, s.leftAt, now) {
			return nil // the pending vacate is cancelled: no event
		}
		// The delay ended before the vacate loop got to it: the key was
		// vacated, and is occupied again.
		t.emit(k, false, s.leftAt, s.info)
	}
	s.info = bytes.Clone(info)
	t.emit(k, true, now, s.info)
	return nil
}

// Release marks key no longer held; its vacate follows the delay.
func (t *OccupancyTracker) Release(kind broker.OccupancyKind, key string) error {
	if err := broker.CheckOccupancyKey(kind, key); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	k := occupancyKey{kind, key}
	s := t.keys[k]
	if s == nil || !s.held {
		return nil
	}
	s.held = false
	s.leftAt = time.Now().UnixMilli()
	if t.running && t.opts.Delay(kind) == 0 {
		t.emit(k, false, s.leftAt, s.info)
		delete(t.keys, k)
		return nil
	}
	t.gen++
	s.gen = t.gen
	t.pending[kind].push(occupancyPending{key: k, leftAt: s.leftAt, gen: s.gen})
	signal(t.vacates)
	return nil
}

// due tells whether a release of kind at leftAt has served its delay at
// now; never before RunOccupancy, which gives the delays.
func (t *OccupancyTracker) due(kind broker.OccupancyKind, leftAt, now int64) bool {
	return t.running && leftAt+t.opts.Delay(kind).Milliseconds() <= now
}

// emit queues an event for the handler, dropping the oldest past the
// backlog. t.mu is held.
func (t *OccupancyTracker) emit(k occupancyKey, occupied bool, ms int64, info []byte) {
	if len(t.events) >= t.cfg.Backlog {
		if t.dropped == 0 {
			t.log.Warn("memory: occupancy events dropped: the handler does not keep up", "backlog", t.cfg.Backlog)
		}
		t.dropped++
		t.droppedTotal.Add(1)
		t.events[0] = broker.OccupancyEvent{}
		t.events = t.events[1:]
		t.base++
	}
	seq := t.base + uint64(len(t.events))
	t.events = append(t.events, broker.OccupancyEvent{
		ID: t.prefix + strconv.FormatUint(seq, 10), Kind: k.kind, Key: k.key,
		Occupied: occupied, TimeMs: ms, Info: info,
	})
	signal(t.deliveries)
}

// signal wakes the loop waiting on c, if it is not awake already.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// RunOccupancy starts ending delays and handing events to h. o.Lease
// plays no part.
func (t *OccupancyTracker) RunOccupancy(h broker.OccupancyHandler, o broker.OccupancyOptions) error {
	if h == nil {
		return errors.New("memory: RunOccupancy with nil handler")
	}
	if err := o.Check(); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.closed:
		return ErrClosed
	case t.running:
		return errors.New("memory: RunOccupancy called twice")
	}
	t.running, t.opts, t.handler = true, o, h
	t.wg.Add(2)
	go func() { defer t.wg.Done(); t.vacateLoop() }()
	go func() { defer t.wg.Done(); t.deliverLoop() }()
	return nil
}

// vacateLoop ends the delays as they come.
func (t *OccupancyTracker) vacateLoop() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := t.vacateDue()
		if next > 0 {
			timer.Reset(next)
		}
		select {
		case <-t.stop:
			return
		case <-timer.C:
		case <-t.vacates:
		}
	}
}

// vacateDue vacates every key whose delay ended and returns how long
// until the next one ends, 0 when none waits.
func (t *OccupancyTracker) vacateDue() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now().UnixMilli()
	var next int64
	for kind := range t.pending {
		q := &t.pending[kind]
		for {
			p, ok := q.peek()
			if !ok {
				break
			}
			s := t.keys[p.key]
			if s == nil || s.gen != p.gen {
				q.pop() // cancelled by a Hold
				continue
			}
			if !t.due(p.key.kind, p.leftAt, now) {
				at := p.leftAt + t.opts.Delay(p.key.kind).Milliseconds()
				if next == 0 || at < next {
					next = at
				}
				break
			}
			q.pop()
			t.emit(p.key, false, p.leftAt, s.info)
			delete(t.keys, p.key)
		}
	}
	if next == 0 {
		return 0
	}
	return time.Duration(max(next-now, 1)) * time.Millisecond
}

// deliverLoop hands the queued events to the handler, again after a
// wait when it fails.
func (t *OccupancyTracker) deliverLoop() {
	retry := occupancyRetryMin
	for {
		batch, last := t.nextBatch()
		if batch == nil {
			select {
			case <-t.stop:
				return
			case <-t.deliveries:
				continue
			}
		}
		err := t.handler.HandleOccupancy(t.ctx, batch)
		if err == nil {
			t.forget(last)
			retry = occupancyRetryMin
			continue
		}
		if t.ctx.Err() != nil {
			return
		}
		t.log.Warn("memory: occupancy handler failed; the events come again", "events", len(batch), "retry_in", retry, "error", err)
		select {
		case <-t.stop:
			return
		case <-time.After(retry):
		}
		retry = min(2*retry, occupancyRetryMax)
	}
}

// nextBatch returns a copy of the first queued events and the sequence
// number of the last, or nil when none waits.
func (t *OccupancyTracker) nextBatch() ([]broker.OccupancyEvent, uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := min(len(t.events), occupancyBatch)
	if n == 0 {
		return nil, 0
	}
	return append([]broker.OccupancyEvent(nil), t.events[:n]...), t.base + uint64(n) - 1
}

// forget drops the events up to sequence number last, handed over; some
// may have been dropped meanwhile.
func (t *OccupancyTracker) forget(last uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if last < t.base {
		return
	}
	n := int(last - t.base + 1)
	clear(t.events[:n])
	t.events = t.events[n:]
	t.base += uint64(n)
	if len(t.events) == 0 {
		t.events = nil // let the backing array go
		if t.dropped > 0 {
			t.log.Info("memory: occupancy handler caught up", "dropped", t.dropped)
			t.dropped = 0
		}
	}
}

// OccupancyDropped returns how many events were dropped past the backlog
// since the tracker was made (broker.OccupancyDropCounter).
func (t *OccupancyTracker) OccupancyDropped() uint64 { return t.droppedTotal.Load() }

// Close stops the loops and waits for them, ending the handler's call
// (its ctx is done). Later calls return nil; Hold, Release and
// RunOccupancy then return ErrClosed.
func (t *OccupancyTracker) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	close(t.stop)
	t.cancel()
	t.mu.Unlock()
	t.wg.Wait()
	return nil
}
