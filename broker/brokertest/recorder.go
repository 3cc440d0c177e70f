package brokertest

import (
	"bytes"
	"maps"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
)

// waitTimeout bounds every wait for a delivery or an expiry. It only
// decides when a test gives up; no test asserts how fast anything happens.
const waitTimeout = 20 * time.Second

// delivery is one HandlePublication call, copied so that later changes by
// the broker cannot alter what the test saw.
type delivery struct {
	pub   broker.Publication
	sp    broker.StreamPosition
	delta bool
	prev  *broker.Publication
}

// patternDelivery is one HandlePatternPublication call, copied like a
// delivery.
type patternDelivery struct {
	scope string
	pub   broker.Publication
}

// recorder is the EventHandler the suites run brokers with, and the
// PatternHandler and RunHandler. It records everything and notices when
// one channel's publications are handled concurrently, on the exact path
// or on the pattern path.
type recorder struct {
	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every event
	pubs     map[string][]delivery
	runs     map[string][][]delivery
	patterns map[string][]patternDelivery // by channel
	joins    map[string][]broker.ClientInfo
	leaves   map[string][]broker.ClientInfo
	controls [][]byte
	// inFlight and overlaps count per channel, patInFlight and
	// patOverlaps per channel on the pattern path.
	inFlight    map[string]int
	overlaps    map[string]int
	patInFlight map[string]int
	patOverlaps map[string]int
}

var (
	_ broker.EventHandler   = (*recorder)(nil)
	_ broker.PatternHandler = (*recorder)(nil)
	_ broker.RunHandler     = (*recorder)(nil)
)

func newRecorder() *recorder {
	return &recorder{
		changed:     make(chan struct{}),
		pubs:        make(map[string][]delivery),
		runs:        make(map[string][][]delivery),
		patterns:    make(map[string][]patternDelivery),
		joins:       make(map[string][]broker.ClientInfo),
		leaves:      make(map[string][]broker.ClientInfo),
		inFlight:    make(map[string]int),
		overlaps:    make(map[string]int),
		patInFlight: make(map[string]int),
		patOverlaps: make(map[string]int),
	}
}

func (r *recorder) notify() {
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *recorder) HandlePublication(channel string, pub *broker.Publication, sp broker.StreamPosition, delta bool, prev *broker.Publication) error {
	r.mu.Lock()
	r.inFlight[channel]++
	if r.inFlight[channel] > 1 {
		r.overlaps[channel]++
	}
	r.mu.Unlock()
	// Give a concurrent delivery for the same channel a chance to overlap.
	runtime.Gosched()
	d := delivery{pub: copyPub(*pub), sp: sp, delta: delta}
	if prev != nil {
		p := copyPub(*prev)
		d.prev = &p
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inFlight[channel]--
	r.pubs[channel] = append(r.pubs[channel], d)
	r.notify()
	return nil
}

func (r *recorder) HandlePatternPublication(scope, channel string, pub *broker.Publication) error {
	r.mu.Lock()
	r.patInFlight[channel]++
	if r.patInFlight[channel] > 1 {
		r.patOverlaps[channel]++
	}
	r.mu.Unlock()
	runtime.Gosched()
	d := patternDelivery{scope: scope, pub: copyPub(*pub)}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.patInFlight[channel]--
	r.patterns[channel] = append(r.patterns[channel], d)
	r.notify()
	return nil
}

// HandleRun records a run of PublishRunTo as one entry of runs.
func (r *recorder) HandleRun(channel string, run []broker.RunPublication) error {
	ds := make([]delivery, 0, len(run))
	for _, rp := range run {
		d := delivery{pub: copyPub(*rp.Pub), delta: rp.Delta}
		if rp.Prev != nil {
			p := copyPub(*rp.Prev)
			d.prev = &p
		}
		ds = append(ds, d)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs[channel] = append(r.runs[channel], ds)
	r.notify()
	return nil
}

func (r *recorder) HandleJoin(channel string, info *broker.ClientInfo) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.joins[channel] = append(r.joins[channel], copyInfo(*info))
	r.notify()
	return nil
}

func (r *recorder) HandleLeave(channel string, info *broker.ClientInfo) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.leaves[channel] = append(r.leaves[channel], copyInfo(*info))
	r.notify()
	return nil
}

func (r *recorder) HandleControl(data []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.controls = append(r.controls, bytes.Clone(data))
	r.notify()
	return nil
}

// waitUntil blocks until cond, evaluated under the recorder's lock, holds,
// failing the test after waitTimeout.
func (r *recorder) waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		ok, changed := cond(), r.changed
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

// waitPubs waits until channel has at least n deliveries and returns the
// first n.
func (r *recorder) waitPubs(t testing.TB, channel string, n int) []delivery {
	t.Helper()
	r.waitUntil(t, "publications on "+channel, func() bool { return len(r.pubs[channel]) >= n })
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.pubs[channel][:n]...)
}

// waitPatterns waits until channel has at least n pattern deliveries and
// returns the first n.
func (r *recorder) waitPatterns(t testing.TB, channel string, n int) []patternDelivery {
	t.Helper()
	r.waitUntil(t, "pattern publications of "+channel, func() bool { return len(r.patterns[channel]) >= n })
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]patternDelivery(nil), r.patterns[channel][:n]...)
}

// patternsOf returns the pattern deliveries of channel so far.
func (r *recorder) patternsOf(channel string) []patternDelivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]patternDelivery(nil), r.patterns[channel]...)
}

func (r *recorder) patternOverlapCount(channel string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.patOverlaps[channel]
}

func (r *recorder) pubCount(channel string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pubs[channel])
}

func (r *recorder) overlapCount(channel string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.overlaps[channel]
}

func copyPub(p broker.Publication) broker.Publication {
	p.Data = bytes.Clone(p.Data)
	p.Tags = maps.Clone(p.Tags)
	if p.Info != nil {
		info := copyInfo(*p.Info)
		p.Info = &info
	}
	return p
}

func copyInfo(i broker.ClientInfo) broker.ClientInfo {
	i.ConnInfo = bytes.Clone(i.ConnInfo)
	i.ChanInfo = bytes.Clone(i.ChanInfo)
	return i
}
