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

// recorder is the EventHandler the suites run brokers with. It records
// everything and notices when one channel's publications are handled
// concurrently.
type recorder struct {
	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every event
	pubs     map[string][]delivery
	joins    map[string][]broker.ClientInfo
	leaves   map[string][]broker.ClientInfo
	controls [][]byte
	inFlight map[string]int
	overlaps map[string]int
}

var _ broker.EventHandler = (*recorder)(nil)

func newRecorder() *recorder {
	return &recorder{
		changed:  make(chan struct{}),
		pubs:     make(map[string][]delivery),
		joins:    make(map[string][]broker.ClientInfo),
		leaves:   make(map[string][]broker.ClientInfo),
		inFlight: make(map[string]int),
		overlaps: make(map[string]int),
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
