package hooks

import (
	"cmp"
	"slices"
	"sync"
	"time"
)

// Outcome is what became of an event or a request.
type Outcome uint8

const (
	// Delivered: the backend accepted the event.
	Delivered Outcome = iota + 1
	// Failed: a request failed; its events are sent again.
	Failed
	// Dropped: the event will never be delivered.
	Dropped
)

// String is the outcome's name: "delivered", "failed" or "dropped".
func (o Outcome) String() string {
	switch o {
	case Delivered:
		return "delivered"
	case Failed:
		return "failed"
	case Dropped:
		return "dropped"
	}
	return "unknown"
}

// Record is one line of a queue's recent history, for the admin UI.
type Record struct {
	Time    time.Time
	Outcome Outcome
	// Event is the event delivered or dropped; for a failed request, the
	// first event of its batch.
	Event Event
	// Batch is the number of events of a failed request.
	Batch int
	// Attempt counts the failed requests of a batch in a row, this one
	// included.
	Attempt int
	// Reason is why a request failed (a Fail constant) or an event was
	// dropped (a Drop constant).
	Reason string
	// Error is the failure's error.
	Error string

	seq uint64 // order of adding, for Recent
}

// ring keeps the last records added. Events (delivered and dropped) and
// failures are kept apart, so that a busy stream of deliveries does not
// push the failures out of sight.
type ring struct {
	mu       sync.Mutex
	events   []Record
	failures []Record
	nextEv   int
	nextFail int
	seq      uint64
}

func newRing(size int) *ring {
	return &ring{events: make([]Record, 0, size), failures: make([]Record, 0, size)}
}

func (r *ring) addEvent(rec Record) {
	r.mu.Lock()
	r.seq++
	rec.seq = r.seq
	r.events, r.nextEv = put(r.events, r.nextEv, rec)
	r.mu.Unlock()
}

func (r *ring) addFailure(rec Record) {
	r.mu.Lock()
	r.seq++
	rec.seq = r.seq
	r.failures, r.nextFail = put(r.failures, r.nextFail, rec)
	r.mu.Unlock()
}

// put stores rec in the ring buf whose oldest record is at next once full.
func put(buf []Record, next int, rec Record) ([]Record, int) {
	if len(buf) < cap(buf) {
		return append(buf, rec), 0
	}
	buf[next] = rec
	return buf, (next + 1) % len(buf)
}

// records returns every record kept, newest first.
func (r *ring) records() []Record {
	r.mu.Lock()
	out := make([]Record, 0, len(r.events)+len(r.failures))
	out = append(out, r.events...)
	out = append(out, r.failures...)
	r.mu.Unlock()
	slices.SortFunc(out, func(a, b Record) int { return cmp.Compare(b.seq, a.seq) })
	return out
}
