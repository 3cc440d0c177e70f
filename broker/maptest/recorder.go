package maptest

import (
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/internal/suitekit"
	"github.com/gyrehq/gyre/internal/condwait"
)

// delivery is one change handed to the recorder, copied so that later
// changes by the broker cannot alter what the test saw.
type delivery struct {
	pub   broker.Publication
	sp    broker.StreamPosition
	delta bool
	prev  *broker.Publication
}

// recorder is the RunHandler the suite runs brokers with. It records each
// channel's deliveries in the order they came, and notices when one
// channel's runs are handed over concurrently and calls that break the
// shape of the contract; checkContract reports both.
type recorder struct {
	mu        sync.Mutex
	cond      *sync.Cond // broadcast on every call
	pubs      map[string][]delivery
	inFlight  map[string]int
	overlaps  map[string]int
	malformed []string
}

var _ broker.RunHandler = (*recorder)(nil)

func newRecorder() *recorder {
	r := &recorder{
		pubs:     make(map[string][]delivery),
		inFlight: make(map[string]int),
		overlaps: make(map[string]int),
	}
	r.cond = sync.NewCond(&r.mu)
	return r
}

// HandleRuns records the call's runs. A channel counts as in the handler
// once per call however many of its runs the call carries.
func (r *recorder) HandleRuns(runs []broker.Run) error {
	channels := make(map[string]bool)
	for _, run := range runs {
		channels[run.Channel] = true
	}
	r.mu.Lock()
	for ch := range channels {
		r.inFlight[ch]++
		if r.inFlight[ch] > 1 {
			r.overlaps[ch]++
		}
	}
	r.mu.Unlock()
	// Give a concurrent call for the same channel a chance to overlap.
	runtime.Gosched()
	copied, malformed := copyRuns(runs)
	r.mu.Lock()
	defer r.mu.Unlock()
	for ch := range channels {
		r.inFlight[ch]--
	}
	for i, run := range runs {
		r.pubs[run.Channel] = append(r.pubs[run.Channel], copied[i]...)
	}
	r.malformed = append(r.malformed, malformed...)
	r.cond.Broadcast()
	return nil
}

// copyRuns copies the runs' changes and describes what breaks the
// contract's shape.
func copyRuns(runs []broker.Run) ([][]delivery, []string) {
	var malformed []string
	if len(runs) == 0 {
		malformed = append(malformed, "HandleRuns called without runs")
	}
	copied := make([][]delivery, len(runs))
	for i, run := range runs {
		if run.Channel == "" || len(run.Pubs) == 0 || run.Scope != "" || run.Pattern != "" {
			malformed = append(malformed, fmt.Sprintf("run of channel %q, scope %q, pattern %q with %d changes", run.Channel, run.Scope, run.Pattern, len(run.Pubs)))
		}
		for _, rp := range run.Pubs {
			if rp.Pub == nil || rp.Pub.Key == "" {
				malformed = append(malformed, fmt.Sprintf("run of channel %q with a change without a key", run.Channel))
				continue
			}
			copied[i] = append(copied[i], copyRunPublication(rp))
		}
	}
	return copied, malformed
}

func copyRunPublication(rp broker.RunPublication) delivery {
	d := delivery{pub: suitekit.CopyPublication(*rp.Pub), sp: rp.Position, delta: rp.Delta}
	if rp.Prev != nil {
		p := suitekit.CopyPublication(*rp.Prev)
		d.prev = &p
	}
	return d
}

// waitUntil blocks until cond, evaluated under the recorder's lock, holds,
// failing the test after waitTimeout.
func (r *recorder) waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if !condwait.Until(r.cond, suitekit.WaitTimeout, cond) {
		t.Fatalf("gave up waiting for %s", what)
	}
}

// waitPubs waits until channel has at least n deliveries and returns the
// first n.
func (r *recorder) waitPubs(t testing.TB, channel string, n int) []delivery {
	t.Helper()
	r.waitUntil(t, fmt.Sprintf("%d changes on %s", n, channel), func() bool { return len(r.pubs[channel]) >= n })
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.pubs[channel][:n])
}

// waitKey waits for a change of key on channel and returns the channel's
// deliveries up to and including the first such change.
func (r *recorder) waitKey(t testing.TB, channel, key string, removed bool) []delivery {
	t.Helper()
	n := 0
	r.waitUntil(t, fmt.Sprintf("a change of %q (removed %v) on %s", key, removed, channel), func() bool {
		i := slices.IndexFunc(r.pubs[channel], func(d delivery) bool { return d.pub.Key == key && d.pub.Removed == removed })
		n = i + 1
		return i >= 0
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.pubs[channel][:n])
}

// pubsOf returns the channel's deliveries so far.
func (r *recorder) pubsOf(channel string) []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.pubs[channel])
}

// checkContract fails the test if a channel's runs were ever handled
// concurrently, or a HandleRuns call was malformed.
func (r *recorder) checkContract(t testing.TB) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ch := range slices.Sorted(maps.Keys(r.overlaps)) {
		t.Errorf("%s: %d HandleRuns calls with runs of the channel began while another was in the handler", ch, r.overlaps[ch])
	}
	for _, m := range r.malformed {
		t.Errorf("malformed HandleRuns call: %s", m)
	}
}
