package loadtest

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// workerStats is a worker's running count, reported while it works.
type workerStats struct {
	Opened     int64 `json:"opened"`
	Failed     int64 `json:"failed"`
	Dropped    int64 `json:"dropped"`
	Received   int64 `json:"received"`
	OutOfOrder int64 `json:"out_of_order"`
	// Reconnected counts the dropped connections that were connected
	// and subscribed again (Reconnect).
	Reconnected int64 `json:"reconnected,omitempty"`
	// CPUSeconds is a child process's user and system time so far, zero
	// for connections held in the running process (counted with it).
	CPUSeconds float64 `json:"cpu_seconds,omitempty"`
	// LastDelivery is when the latest publication arrived (Unix ns).
	LastDelivery int64 `json:"last_delivery,omitempty"`
	// Churn counts churn's connections per node (URL); Opened, Failed
	// and Dropped are then their sums.
	Churn []ChurnCounts `json:"churn,omitempty"`
}

func (s *workerStats) add(o workerStats) {
	s.Opened += o.Opened
	s.Failed += o.Failed
	s.Dropped += o.Dropped
	s.Received += o.Received
	s.OutOfOrder += o.OutOfOrder
	s.Reconnected += o.Reconnected
	s.CPUSeconds += o.CPUSeconds
	s.LastDelivery = max(s.LastDelivery, o.LastDelivery)
	for i, c := range o.Churn {
		if i == len(s.Churn) {
			s.Churn = append(s.Churn, ChurnCounts{})
		}
		s.Churn[i].add(c)
	}
}

// workerResult is what a worker hands back once its connections are
// closed.
type workerResult struct {
	workerStats
	Lost           int64        `json:"lost"`
	LossySubs      int64        `json:"lossy_subscribers"`
	Latency        histSnapshot `json:"latency"`
	ConnectLatency histSnapshot `json:"connect_latency"`
	// SubscribeLatency is churn's, from the subscribe command to its
	// reply.
	SubscribeLatency histSnapshot `json:"subscribe_latency"`
	OpenStart        int64        `json:"open_start"`
	OpenEnd          int64        `json:"open_end"`
	Errors           []ErrorCount `json:"errors,omitempty"`
	// Negotiated counts the connections that negotiated compression,
	// ContextTakeover those of them whose server keeps its context.
	Negotiated      int64   `json:"negotiated,omitempty"`
	ContextTakeover int64   `json:"context_takeover,omitempty"`
	Traffic         traffic `json:"traffic"`
	// Reconnect is what the pool's reconnects did (Reconnect).
	Reconnect reconnectSnapshot `json:"reconnect"`
}

// worker holds a share of the connections, in this process (pool) or in
// a child process (child).
type worker interface {
	stats() workerStats
	// ready is closed once every connection has been tried.
	ready() <-chan struct{}
	// finish closes the connections and returns the result; published
	// is the number of publications each publisher got accepted.
	finish(published []uint64) (workerResult, error)
}

// pool is a worker in this process.
type pool struct {
	spec       workerSpec
	dialers    []*net.Dialer
	latency    histogram
	connectLat histogram
	errs       errorSamples

	opened, failed, dropped atomic.Int64
	negotiated, takeover    atomic.Int64
	openStart, openEnd      atomic.Int64

	mu      sync.Mutex
	closing bool
	conns   []*conn
	readers sync.WaitGroup

	readyCh chan struct{}
	cancel  context.CancelFunc // ends the opening
	// life ends when the pool finishes: it stops the reconnects under
	// way.
	life    context.Context
	endLife context.CancelFunc
	rc      reconnects

	// churn, in churn, keeps connections coming and going in place of
	// open; the pool holds none of them in conns.
	churn *churner
}

// startPool begins opening spec's connections in the background (in
// churn: the churn, until finish).
func startPool(ctx context.Context, spec workerSpec) *pool {
	life, endLife := context.WithCancel(ctx)
	ctx, cancel := context.WithTimeout(life, spec.OpenWithin)
	p := &pool{spec: spec, dialers: dialers(spec.Sources), readyCh: make(chan struct{}), cancel: cancel, life: life, endLife: endLife}
	if spec.Scenario == ScenarioChurn {
		p.churn = newChurner(p)
	}
	go func() {
		defer close(p.readyCh)
		defer cancel()
		if p.churn != nil {
			p.churn.run(ctx)
			return
		}
		p.open(ctx)
	}()
	return p
}

func (p *pool) ready() <-chan struct{} { return p.readyCh }

func (p *pool) open(ctx context.Context) {
	now := time.Now()
	// Tokens are signed ahead so that connect measures the server's token
	// check, not this side's signing.
	tokens := make([]string, p.spec.Count)
	for i := range tokens {
		t, err := p.spec.tokenFor(p.spec.First+i, now)
		if err != nil {
			p.failed.Add(int64(p.spec.Count))
			p.errs.add("sign token: " + err.Error())
			return
		}
		tokens[i] = t
	}
	p.openStart.Store(time.Now().UnixNano())
	defer func() { p.openEnd.Store(time.Now().UnixNano()) }()
	// A fixed set of goroutines sets the connections up: the dial needs
	// a deep stack, which each keeps from one connection to the next,
	// where a goroutine per connection would grow one every time. Each
	// open connection then gets a reader goroutine, whose stack stays
	// small.
	work := make(chan int)
	var setters sync.WaitGroup
	for range min(p.spec.Concurrency, p.spec.Count) {
		setters.Add(1)
		go func() {
			defer setters.Done()
			for i := range work {
				p.setUp(ctx, p.spec.First+i, tokens[i])
			}
		}()
	}
	defer func() {
		close(work)
		setters.Wait()
	}()
	pace := newPacer(p.spec.Rate)
	for i := range p.spec.Count {
		if !pace.wait(ctx) {
			return
		}
		select {
		case work <- i:
		case <-ctx.Done():
			return
		}
	}
}

// setUp dials connection i, connects and subscribes, and starts its
// reader.
func (p *pool) setUp(ctx context.Context, i int, token string) {
	start := time.Now()
	c := &conn{p: p, typ: p.spec.Protocol, id: i, node: i % len(p.spec.URLs)}
	if p.spec.Publishers > 0 {
		c.last = make([]uint64, p.spec.Publishers)
		c.got = make([]uint64, p.spec.Publishers)
	}
	err := c.dial(ctx, p.spec.URLs[c.node], p.dialers[i%len(p.dialers)], p.spec.Compression)
	if err == nil {
		err = c.setup(token, p.spec.channelsFor(i))
		if err != nil {
			c.nc.Close()
		}
	}
	if err == nil && !p.add(c) {
		c.close()
		err = errors.New("closed before it was set up")
	}
	if err != nil {
		p.failed.Add(1)
		p.errs.add(errKind(err))
		return
	}
	p.connectLat.record(int64(time.Since(start)))
	p.opened.Add(1)
	if c.rs.z != nil {
		p.negotiated.Add(1)
		if c.rs.z.takeover {
			p.takeover.Add(1)
		}
	}
	go p.read(c)
}

// read reads from c until it ends (with Reconnect, until the pool
// finishes or a reconnect gives up); it is the connection's only
// goroutine once it is set up.
func (p *pool) read(c *conn) {
	defer p.readers.Done()
	for {
		err := c.run()
		if p.isClosing() {
			return
		}
		p.dropped.Add(1)
		p.errs.add("dropped: " + errKind(err))
		if !p.spec.Reconnect || !p.reconnect(c) {
			return
		}
	}
}

func (p *pool) isClosing() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closing
}

// add keeps c unless the pool is closing.
func (p *pool) add(c *conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closing {
		return false
	}
	p.conns = append(p.conns, c)
	p.readers.Add(1)
	return true
}

func (p *pool) snapshotConns() []*conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conns
}

func (p *pool) stats() workerStats {
	s := workerStats{Opened: p.opened.Load(), Failed: p.failed.Load(), Dropped: p.dropped.Load(), Reconnected: p.rc.back.Load()}
	for _, c := range p.snapshotConns() {
		s.Received += c.received.Load()
		s.OutOfOrder += c.outOfOrder.Load()
		s.LastDelivery = max(s.LastDelivery, c.lastAt.Load())
	}
	if p.churn != nil {
		s.Churn = p.churn.counts()
	}
	return s
}

func (p *pool) finish(published []uint64) (workerResult, error) {
	p.cancel()
	p.endLife()
	<-p.readyCh
	p.mu.Lock()
	p.closing = true
	conns := p.conns
	p.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	p.readers.Wait()
	r := workerResult{
		workerStats:     p.stats(),
		Latency:         p.latency.snapshot(),
		ConnectLatency:  p.connectLat.snapshot(),
		OpenStart:       p.openStart.Load(),
		OpenEnd:         p.openEnd.Load(),
		Negotiated:      p.negotiated.Load(),
		ContextTakeover: p.takeover.Load(),
		Reconnect:       p.rc.snapshot(),
	}
	for _, c := range conns {
		// Its reader has returned: the counts are final.
		r.Traffic.add(c.rs.traffic)
		if n := c.lost(published); n > 0 {
			r.Lost += n
			r.LossySubs++
		}
	}
	if p.churn != nil {
		r.SubscribeLatency = p.churn.subscribeLat.snapshot()
		r.Traffic.add(p.churn.received())
	}
	r.Errors = p.errs.list()
	return r, nil
}

// errKind makes an error countable: network errors without the
// addresses and ports that make each one unique.
func errKind(err error) string {
	var op *net.OpError
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed by the server (EOF)"
	case errors.As(err, &op):
		return op.Op + ": " + op.Err.Error()
	}
	return err.Error()
}

// pacer spaces events out to a rate per second; zero means no pacing.
type pacer struct {
	interval time.Duration
	next     time.Time
}

func newPacer(rate float64) *pacer {
	p := &pacer{next: time.Now()}
	if rate > 0 {
		p.interval = time.Duration(float64(time.Second) / rate)
	}
	return p
}

// wait blocks until the next event is due, false if ctx ended first.
func (p *pacer) wait(ctx context.Context) bool {
	if p.interval == 0 {
		return ctx.Err() == nil
	}
	return waitUntil(ctx, p.reserve(time.Now()))
}

// reserve books the next event and says when it is due. A pacer that
// fell behind by more than a second forgets the backlog instead of
// bursting.
func (p *pacer) reserve(now time.Time) time.Time {
	if p.next.Sub(now) < -time.Second {
		p.next = now
	}
	at := p.next
	p.next = p.next.Add(p.interval)
	return at
}

// waitUntil blocks until t, false if ctx ended first.
func waitUntil(ctx context.Context, t time.Time) bool {
	if d := time.Until(t); d > 0 {
		timer := time.NewTimer(d)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
			return false
		}
	}
	return ctx.Err() == nil
}

// sharedPacer is a pacer that goroutines wait on together, each for
// its own event.
type sharedPacer struct {
	mu sync.Mutex
	p  *pacer
}

func (s *sharedPacer) wait(ctx context.Context) bool {
	if s.p.interval == 0 {
		return ctx.Err() == nil
	}
	s.mu.Lock()
	at := s.p.reserve(time.Now())
	s.mu.Unlock()
	return waitUntil(ctx, at)
}
