package redis

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/redis/rueidis"
)

// Occupancy keys: occupancyPartitions partitions, each under a base with
// a hash tag of its own, "<prefix>.{o<N>}.", so that one script reaches
// all of a partition's keys in a cluster. Every node of a Gyre cluster
// uses the same number. The tracker of a route (NewRouteOccupancyTracker)
// adds "r<length of the route>:<route>." to the base: each route is a
// tracker of its own. A member is a key with its kind: "c<channel>" or
// "u<user>".
//
//	<base>l                sorted set: incarnation -> end of its lease (Unix ms)
//	<base>n.<incarnation>  set: the members the incarnation holds
//	<base>k.<member>       hash: holders (c count, n<incarnation> each), i info,
//	                       v when the last holder left (during the delay)
//	<base>v                sorted set: member -> end of its delay
//	<base>e                stream: transitions not yet handed over
//	<base>m                hash: e the stream's epoch, d transitions dropped
//	                       since the reader last looked
//	<base>r                string: the node reading the partition, expiring with its lease
const occupancyPartitions = 16

// The pacing of a tracker. The reader of a partition looks at it every
// occupancyPollEvery, and occupancyLinger after this node made an event
// there (the linger gathers a burst into one look); it renews its reader
// lease each time. The lease lasts Lease but at most
// occupancyMaxReaderLease, so that a dead reader's partitions are taken
// over soon. Every third of the reader lease a node tries to take the
// partitions nobody reads.
const (
	occupancyPollEvery      = 100 * time.Millisecond
	occupancyLinger         = 2 * time.Millisecond
	occupancyMaxReaderLease = 5 * time.Second
	// occupancyRead bounds the transitions of one partition per handler
	// call; occupancySweep the members one look releases or vacates.
	occupancyRead  = 128
	occupancySweep = 1000
	// occupancyPipeline bounds the calls of one pipeline when this node
	// holds its members again, or applies what failed.
	occupancyPipeline = 512
	// occupancyBacklog bounds the transitions of a partition's stream
	// that no handler took yet.
	occupancyBacklog = 10000
	// occupancyHoldTick bounds the period of the loop that renews this
	// node's leases and retries what failed.
	occupancyHoldTick = 500 * time.Millisecond
	// After a failed handler call, the next waits from occupancyRetryMin,
	// doubling up to occupancyRetryMax.
	occupancyRetryMin = 50 * time.Millisecond
	occupancyRetryMax = 5 * time.Second
)

// OccupancyTracker is a broker.OccupancyTracker keeping the holds of
// every node in Redis, on the Engine's connections. Make one per node
// with NewOccupancyTracker. Its methods are safe for concurrent use.
//
// Keys are spread over 16 partitions, each in one place: a hash tag of
// its own in a cluster, one of the Config.Addresses (by partition
// number) when sharded. A partition's state changes only in Lua scripts,
// each of which checks and changes a key's holders, the pending vacates,
// the leases and the partition's stream of transitions at once: a
// transition is written to the stream by the script that makes it,
// exactly once for the cluster.
//
// # Holds and leases
//
// A node holds keys under an incarnation: its random ID and a counter,
// with a lease in the partition renewed every Lease/3. A hold is refused
// once the incarnation's lease has run out, and the node then starts a
// new incarnation and holds all its keys of the partition again; so does
// a renewal that finds the lease gone. Any node reading the partition
// releases the keys of an incarnation whose lease ran out, as of the end
// of the lease; a key that another incarnation holds drops such a holder
// as soon as that one holds it (no event), so that the node that holds
// its keys again and then releases one has it vacated as of that
// release. Hold and Release return once Redis has applied them. The
// node keeps what it holds in memory, which is what it tells Redis: a
// Hold or Release that failed is applied again every half second until
// Redis takes it, in its latest form (a key held, then released while
// Redis was away, is released).
//
// # Readers and delivery
//
// One node at a time reads a partition, under a reader lease it renews
// at each look (every 100 ms): the look also releases dead incarnations'
// keys and ends the delays that passed, and returns the transitions at
// the head of the stream, up to 128, which the node hands to its handler
// with those of its other partitions. Once the handler returns nil they
// are trimmed from the stream; after an error they come again, with the
// same IDs: the partition, the stream's epoch and the stream entry ID.
// A reader that stops looking (it died, or is closed) loses the lease
// after min(Lease, 5s) and another node takes the partition over, from
// the head of the stream. The handler's ctx is done once this node's
// reader lease of a partition in the call may have run out.
//
// # When Redis fails
//
// While Redis is unreachable, Hold and Release return errors wrapping
// broker.ErrNotAvailable and are kept for later, and no events are made
// or handed over. A node whose lease runs out meanwhile has its keys
// released by the reader, if one reaches Redis, and holds them again
// when it is back: within the delay this makes no event. A Redis that
// restarts with its data is the same. A Redis that restarts without its data (or fails over before replicating it) loses
// the holds, the pending vacates and the transitions not handed over yet:
// every node then holds its keys again, which makes occupied/online
// again for keys that were occupied (new IDs: the stream has a new
// epoch), and keys whose delay was running are never vacated.
//
// # When the handler does not keep up
//
// A partition's stream keeps at most 10,000 transitions not handed over
// yet: past it, each new one drops the oldest (a handler that keeps
// failing, its backend down for long). The script that drops counts the
// drop in the partition, and the reader's next look takes the count: the
// reader logs a Warn line when a partition starts dropping and an Info
// line with the episode's total once its stream is empty again, and adds
// the drops to OccupancyDropped; a reader that loses the partition
// during an episode ends it with an Info line of its own. Each drop is
// counted by one node, the reader of its partition then: the sum over
// the nodes is the cluster's, but for the count of a look whose answer
// was lost (its failure is logged).
type OccupancyTracker struct {
	e     *Engine
	log   *slog.Logger
	node  string // random: names this tracker in reader leases and incarnations
	incs  atomic.Uint64
	seeds atomic.Uint64 // for epoch candidates
	parts [occupancyPartitions]*occupancyPartition
	// backlog is occupancyBacklog, and backlogArg the same as the last
	// argument of the scripts that may make transitions; tests make it
	// small (setBacklog) before the tracker runs.
	backlog    int
	backlogArg string
	dropped    atomic.Uint64 // for OccupancyDropped

	mu       sync.Mutex // orders RunOccupancy with Close
	running  bool
	active   atomic.Bool // running: opts and handler are set
	closed   atomic.Bool
	handler  broker.OccupancyHandler
	opts     broker.OccupancyOptions
	reader   time.Duration // the reader lease
	holdKick chan struct{} // something for holdLoop to apply
	pollKick chan struct{} // an event was made, or the handler is free: look now
	// made has bit n set when this node made an event in partition n
	// since pollLoop last looked there.
	made   atomic.Uint32
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	reading readState
}

var (
	_ broker.OccupancyTracker     = (*OccupancyTracker)(nil)
	_ broker.OccupancyDropCounter = (*OccupancyTracker)(nil)
)

// occupancyPartition is this node's view of one partition: what it
// holds there and how far Redis knows it.
type occupancyPartition struct {
	n      int
	client rueidis.Client
	base   string
	keys   []string // leases, pending, stream, meta: KEYS[1-4] of every script
	reader string

	// starting serializes the starts of incarnations (reassert); starts
	// counts them and startErr is the last one's error, for the callers
	// that waited for it.
	starting sync.Mutex
	starts   uint64
	startErr error

	mu sync.Mutex
	// held is what this node holds: member -> info.
	held map[string][]byte
	// dirty members may differ in Redis from held: a call failed, or two
	// ran at once; holdLoop applies them when none is in flight.
	dirty    map[string]struct{}
	inflight map[string]int
	// inc is the incarnation this node holds under; ready once its lease
	// is up and every member held was sent under it. Not ready, calls
	// only mark members dirty.
	inc     string
	ready   bool
	renewed time.Time // when the last renewal of the lease was sent
}

// NewOccupancyTracker returns a tracker on e's connections, which stay
// open until it is closed too (see Engine). Each tracker is a node of its
// own; the trackers of every node of a cluster must use engines of the
// same Prefix and addresses.
func NewOccupancyTracker(e *Engine) *OccupancyTracker {
	return NewRouteOccupancyTracker(e, "")
}

// NewRouteOccupancyTracker returns a tracker of one route (see
// broker.RoutedOccupancy): its keys live apart from those of the other
// routes, so that each route's events are read, handed over and
// acknowledged on their own. The trackers of a route on every node must
// use the same route name.
func NewRouteOccupancyTracker(e *Engine, route string) *OccupancyTracker {
	e.refs.Add(1)
	var b [9]byte
	_, _ = rand.Read(b[:]) // never fails; it crashes the program instead
	log := e.log
	if route != "" {
		log = log.With("route", route)
	}
	t := &OccupancyTracker{
		e:          e,
		log:        log,
		node:       base64.RawURLEncoding.EncodeToString(b[:]),
		backlog:    occupancyBacklog,
		backlogArg: strconv.Itoa(occupancyBacklog),
		holdKick:   make(chan struct{}, 1),
		pollKick:   make(chan struct{}, 1),
	}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	for i := range t.parts {
		base := e.cfg.Prefix + ".{o" + strconv.Itoa(i) + "}."
		if route != "" {
			// Length first: no route's keys can be another's.
			base += "r" + strconv.Itoa(len(route)) + ":" + route + "."
		}
		t.parts[i] = &occupancyPartition{
			n:        i,
			client:   e.clients[i%len(e.clients)],
			base:     base,
			keys:     []string{base + "l", base + "v", base + "e", base + "m"},
			reader:   base + "r",
			held:     make(map[string][]byte),
			dirty:    make(map[string]struct{}),
			inflight: make(map[string]int),
		}
	}
	return t
}

func occupancyMember(kind broker.OccupancyKind, key string) string {
	if kind == broker.OccupancyUser {
		return "u" + key
	}
	return "c" + key
}

func (t *OccupancyTracker) partition(member string) *occupancyPartition {
	return t.parts[fnv64a(member)%occupancyPartitions]
}

// epoch returns a candidate for a stream's epoch, taken by the first
// event of a stream that has none.
func (t *OccupancyTracker) epoch() string {
	return t.node + "." + strconv.FormatUint(t.seeds.Add(1), 36)
}

// Hold says this node holds key. A repeated Hold does nothing.
func (t *OccupancyTracker) Hold(kind broker.OccupancyKind, key string, info []byte) error {
	if err := broker.CheckOccupancyKey(kind, key); err != nil {
		return err
	}
	if t.closed.Load() {
		return ErrClosed
	}
	m := occupancyMember(kind, key)
	p := t.partition(m)
	p.mu.Lock()
	if _, ok := p.held[m]; ok {
		p.mu.Unlock()
		return nil
	}
	p.held[m] = bytes.Clone(info)
	return t.apply(p, m, "hold")
}

// Release says this node no longer holds key. Releasing a key not held
// does nothing.
func (t *OccupancyTracker) Release(kind broker.OccupancyKind, key string) error {
	if err := broker.CheckOccupancyKey(kind, key); err != nil {
		return err
	}
	if t.closed.Load() {
		return ErrClosed
	}
	m := occupancyMember(kind, key)
	p := t.partition(m)
	p.mu.Lock()
	if _, ok := p.held[m]; !ok {
		p.mu.Unlock()
		return nil
	}
	delete(p.held, m)
	return t.apply(p, m, "release")
}

// apply tells Redis whether this node holds m, as p.held says; p.mu is
// held and apply unlocks it. In a partition that is not ready, a hold
// starts an incarnation (holding m with everything else held there);
// before RunOccupancy, or for a release, m is left for holdLoop.
func (t *OccupancyTracker) apply(p *occupancyPartition, m, op string) error {
	for !p.ready {
		_, holding := p.held[m]
		p.dirty[m] = struct{}{}
		p.mu.Unlock()
		if !holding || !t.active.Load() {
			signal(t.holdKick)
			return nil
		}
		if err := t.reassert(p); err != nil {
			signal(t.holdKick)
			return wrapErr("occupancy "+op, err)
		}
		p.mu.Lock()
		if _, missed := p.dirty[m]; !missed {
			p.mu.Unlock()
			return nil // held with the rest
		}
		// Another call started the incarnation before m was held: apply
		// m now, so that Hold returns once Redis has it.
		delete(p.dirty, m)
	}
	c := t.call(p, m)
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), t.e.cfg.IOTimeout)
	defer cancel()
	if err := t.applied(p, m, c.args[1], c.do(ctx)); err != nil {
		return wrapErr("occupancy "+op, err)
	}
	return nil
}

// call returns the call that tells Redis whether this node holds m, and
// counts it in flight. p.mu is held.
func (t *OccupancyTracker) call(p *occupancyPartition, m string) occupancyCall {
	if p.inflight[m]++; p.inflight[m] > 1 {
		// Two calls for m at once may run in either order: the one that
		// ends last applies what holds then.
		p.dirty[m] = struct{}{}
	}
	keys := append(p.keys[:4:4], p.base+"k."+m, p.base+"n."+p.inc)
	if info, ok := p.held[m]; ok {
		return occupancyCall{p, occupancyHoldScript, keys, []string{t.epoch(), p.inc, m, rueidis.BinaryString(info), t.backlogArg}}
	}
	delay := t.opts.Delay(broker.OccupancyUser)
	if m[0] == 'c' {
		delay = t.opts.Delay(broker.OccupancyChannel)
	}
	return occupancyCall{p, occupancyReleaseScript, keys, []string{t.epoch(), p.inc, m, strconv.FormatInt(delay.Milliseconds(), 10), t.backlogArg}}
}

// OccupancyDropped returns how many transitions this node found dropped
// past the backlog in the partitions it read, since it was made
// (broker.OccupancyDropCounter).
func (t *OccupancyTracker) OccupancyDropped() uint64 {
	return t.dropped.Load()
}

// applied takes the result of m's call under incarnation inc: a failure
// leaves m for holdLoop, a lease found gone makes the partition start a
// new incarnation, an event made wakes the reader. It returns the call's
// error.
func (t *OccupancyTracker) applied(p *occupancyPartition, m, inc string, res rueidis.RedisResult) error {
	n, err := res.AsInt64()
	p.mu.Lock()
	if p.inflight[m]--; p.inflight[m] <= 0 {
		delete(p.inflight, m)
	}
	if err != nil || n < 0 {
		p.dirty[m] = struct{}{}
		if err == nil && p.inc == inc {
			p.ready = false
		}
	}
	p.mu.Unlock()
	switch {
	case err != nil || n < 0:
		signal(t.holdKick)
	case n > 0:
		t.madeIn(p)
	}
	return err
}

// madeIn wakes pollLoop for an event this node made in p.
func (t *OccupancyTracker) madeIn(p *occupancyPartition) {
	t.made.Or(1 << p.n)
	signal(t.pollKick)
}

// signal wakes the loop waiting on c, if it is not awake already.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// RunOccupancy starts the tracker: its leases, the reading of the
// partitions and the handing of their transitions to h. A zero o.Lease
// means Config.PresenceTTL.
func (t *OccupancyTracker) RunOccupancy(h broker.OccupancyHandler, o broker.OccupancyOptions) error {
	if h == nil {
		return errors.New("redis: RunOccupancy with nil handler")
	}
	if err := o.Check(); err != nil {
		return err
	}
	if o.Lease == 0 {
		o.Lease = t.e.cfg.PresenceTTL
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.closed.Load():
		return ErrClosed
	case t.running:
		return errors.New("redis: RunOccupancy called twice")
	}
	t.running, t.handler, t.opts = true, h, o
	t.reader = min(o.Lease, occupancyMaxReaderLease)
	t.reading.init()
	t.active.Store(true)
	t.wg.Add(3)
	go func() { defer t.wg.Done(); t.holdLoop() }()
	go func() { defer t.wg.Done(); t.pollLoop() }()
	go func() { defer t.wg.Done(); t.deliverLoop() }()
	return nil
}

// Close stops the tracker's loops, ending its handler's call (its ctx is
// done), and waits for them. It releases nothing: the holds end with the
// leases, as a dead node's do, and another node takes over the
// partitions this one read once its reader leases run out. Later calls
// return nil; the other methods then return ErrClosed.
func (t *OccupancyTracker) Close() error {
	t.mu.Lock()
	if t.closed.Swap(true) {
		t.mu.Unlock()
		return nil
	}
	t.cancel()
	t.mu.Unlock()
	t.wg.Wait()
	t.e.release()
	return nil
}

// stopped tells whether Close was called.
func (t *OccupancyTracker) stopped() bool { return t.ctx.Err() != nil }
