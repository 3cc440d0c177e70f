package brokertest

import (
	"bytes"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/internal/suitekit"
)

const waitTimeout = suitekit.WaitTimeout

// delivery is one publication of a run for the channel's own
// subscribers (Run.Scope empty), copied so that later changes by the
// broker cannot alter what the test saw.
type delivery struct {
	pub   broker.Publication
	sp    broker.StreamPosition
	delta bool
	prev  *broker.Publication
}

// patternDelivery is one publication of a pattern run (Run.Scope set),
// copied like a delivery.
type patternDelivery struct {
	scope string
	pub   broker.Publication
	sp    broker.StreamPosition
}

// handledRun is one run of a HandleRuns call, copied like a delivery.
type handledRun struct {
	channel string
	scope   string
	pubs    []delivery
}

// recorder is the EventHandler the suites run brokers with. It records
// everything: the publications per channel on the exact path and on the
// pattern path, and each HandleRuns call's runs as they came (so that
// tests can check how publications were grouped). It notices when one
// channel's publications are handled concurrently, on either path, and
// calls that break the shape of the contract (no runs, a run without
// publications or channel, a nil publication); checkContract reports
// both.
type recorder struct {
	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every event
	pubs     map[string][]delivery
	patterns map[string][]patternDelivery // by channel
	calls    [][]handledRun               // one entry per HandleRuns call
	joins    map[string][]broker.ClientInfo
	leaves   map[string][]broker.ClientInfo
	controls [][]byte
	// patternLog is the pattern path as it came: deliveries and scope
	// losses (HandlePatternScopeLost), in order.
	patternLog []patternEvent
	// inFlight and overlaps count per channel, patInFlight and
	// patOverlaps per channel on the pattern path.
	inFlight    map[string]int
	overlaps    map[string]int
	patInFlight map[string]int
	patOverlaps map[string]int
	malformed   []string
}

var (
	_ broker.EventHandler            = (*recorder)(nil)
	_ broker.PatternScopeLostHandler = (*recorder)(nil)
)

// patternEvent is one delivery on the pattern path (lost empty) or one
// report of lost scopes.
type patternEvent struct {
	channel string
	data    string
	lost    []string
}

func newRecorder() *recorder {
	return &recorder{
		changed:     make(chan struct{}),
		pubs:        make(map[string][]delivery),
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

// HandleRuns records the call's runs. A channel counts as in the handler
// once per call and path however many of its runs the call carries: runs
// of one call are handled in order, not concurrently.
func (r *recorder) HandleRuns(runs []broker.Run) error {
	exact, pattern := make(map[string]bool), make(map[string]bool)
	for _, run := range runs {
		if run.Scope == "" {
			exact[run.Channel] = true
		} else {
			pattern[run.Channel] = true
		}
	}
	r.mu.Lock()
	enter(exact, r.inFlight, r.overlaps)
	enter(pattern, r.patInFlight, r.patOverlaps)
	r.mu.Unlock()
	// Give a concurrent call for the same channel a chance to overlap.
	runtime.Gosched()
	call := make([]handledRun, 0, len(runs))
	var malformed []string
	if len(runs) == 0 {
		malformed = append(malformed, "HandleRuns called without runs")
	}
	for _, run := range runs {
		if run.Channel == "" || len(run.Pubs) == 0 {
			malformed = append(malformed, fmt.Sprintf("run of channel %q, scope %q with %d publications", run.Channel, run.Scope, len(run.Pubs)))
		}
		hr := handledRun{channel: run.Channel, scope: run.Scope, pubs: make([]delivery, 0, len(run.Pubs))}
		for _, rp := range run.Pubs {
			if rp.Pub == nil {
				malformed = append(malformed, fmt.Sprintf("run of channel %q, scope %q with a nil publication", run.Channel, run.Scope))
				continue
			}
			hr.pubs = append(hr.pubs, copyRunPublication(rp))
		}
		call = append(call, hr)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	leave(exact, r.inFlight)
	leave(pattern, r.patInFlight)
	for _, hr := range call {
		if hr.scope == "" {
			r.pubs[hr.channel] = append(r.pubs[hr.channel], hr.pubs...)
			continue
		}
		for _, d := range hr.pubs {
			r.patterns[hr.channel] = append(r.patterns[hr.channel], patternDelivery{scope: hr.scope, pub: d.pub, sp: d.sp})
			r.patternLog = append(r.patternLog, patternEvent{channel: hr.channel, data: string(d.pub.Data)})
		}
	}
	r.calls = append(r.calls, call)
	r.malformed = append(r.malformed, malformed...)
	r.notify()
	return nil
}

// enter counts the channels as in the handler, and an overlap for each
// that was already.
func enter(channels map[string]bool, inFlight, overlaps map[string]int) {
	for ch := range channels {
		inFlight[ch]++
		if inFlight[ch] > 1 {
			overlaps[ch]++
		}
	}
}

func leave(channels map[string]bool, inFlight map[string]int) {
	for ch := range channels {
		inFlight[ch]--
	}
}

func copyRunPublication(rp broker.RunPublication) delivery {
	d := delivery{pub: copyPub(*rp.Pub), sp: rp.Position, delta: rp.Delta}
	if rp.Prev != nil {
		p := copyPub(*rp.Prev)
		d.prev = &p
	}
	return d
}

func (r *recorder) HandlePatternScopeLost(scopes []string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.patternLog = append(r.patternLog, patternEvent{lost: slices.Clone(scopes)})
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

// callCount returns how many HandleRuns calls the recorder has had.
func (r *recorder) callCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

// checkContract fails the test if a channel's publications were ever
// handled concurrently on one path, or a HandleRuns call was malformed.
func (r *recorder) checkContract(t testing.TB) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ch := range slices.Sorted(maps.Keys(r.overlaps)) {
		t.Errorf("%s: %d HandleRuns calls with runs of the channel began while another was in the handler", ch, r.overlaps[ch])
	}
	for _, ch := range slices.Sorted(maps.Keys(r.patOverlaps)) {
		t.Errorf("%s: %d HandleRuns calls with pattern runs of the channel began while another was in the handler", ch, r.patOverlaps[ch])
	}
	for _, m := range r.malformed {
		t.Errorf("malformed HandleRuns call: %s", m)
	}
}

var (
	copyPub  = suitekit.CopyPublication
	copyInfo = suitekit.CopyInfo
)
