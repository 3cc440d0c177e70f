package occupancytest

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gyrehq/gyre/broker"
)

// waitTimeout bounds every wait for an event. It only decides when a test
// gives up.
const waitTimeout = 30 * time.Second

// key is a key of one kind.
type key struct {
	kind broker.OccupancyKind
	name string
}

func (k key) String() string { return k.kind.String() + " " + k.name }

// arrival is an event as first handed over, and when.
type arrival struct {
	broker.OccupancyEvent
	at   time.Time
	node int
}

// recorder collects what the handlers of one subtest's nodes accepted.
type recorder struct {
	t *testing.T

	mu      sync.Mutex
	changed chan struct{} // closed and replaced at each accepted call
	byID    map[string]broker.OccupancyEvent
	keys    map[key][]arrival
	// active counts the handler calls that hold a key's events now,
	// across nodes.
	active   map[key]int
	problems []string
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{
		t:       t,
		changed: make(chan struct{}),
		byID:    make(map[string]broker.OccupancyEvent),
		keys:    make(map[key][]arrival),
		active:  make(map[key]int),
	}
	t.Cleanup(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, p := range r.problems {
			t.Error(p)
		}
	})
	return r
}

// hook runs first in a handler call; a non-nil error fails the call (the
// events count as not handed over).
type hook func(ctx context.Context, events []broker.OccupancyEvent) error

// handler is node's handler: it runs hook, if any, then accepts the
// events.
func (r *recorder) handler(node int, h hook) broker.OccupancyHandler {
	return handlerFunc(func(ctx context.Context, events []broker.OccupancyEvent) error {
		r.enter(node, events)
		defer r.leave(events)
		if h != nil {
			if err := h(ctx, events); err != nil {
				return err
			}
		}
		r.accept(node, events)
		return nil
	})
}

type handlerFunc func(ctx context.Context, events []broker.OccupancyEvent) error

func (f handlerFunc) HandleOccupancy(ctx context.Context, events []broker.OccupancyEvent) error {
	return f(ctx, events)
}

func (r *recorder) problem(format string, args ...any) {
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
}

// enter marks the keys of events as being handled, noting a key that
// another call holds already.
func (r *recorder) enter(node int, events []broker.OccupancyEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(events) == 0 {
		r.problem("node %d: a handler call without events", node)
	}
	seen := make(map[key]bool)
	for _, ev := range events {
		k := key{ev.Kind, ev.Key}
		if seen[k] {
			continue
		}
		seen[k] = true
		if r.active[k] > 0 {
			r.problem("node %d: handed %v while another handler call holds it", node, k)
		}
		r.active[k]++
	}
}

func (r *recorder) leave(events []broker.OccupancyEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := make(map[key]bool)
	for _, ev := range events {
		k := key{ev.Kind, ev.Key}
		if !seen[k] {
			seen[k] = true
			r.active[k]--
		}
	}
}

// accept records the events first handed over, and checks repeats.
func (r *recorder) accept(node int, events []broker.OccupancyEvent) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ev := range events {
		if ev.ID == "" {
			r.problem("node %d: an event without ID: %+v", node, ev)
			continue
		}
		if first, ok := r.byID[ev.ID]; ok {
			if !sameEvent(first, ev) {
				r.problem("event %s handed over again changed: %+v, then %+v", ev.ID, first, ev)
			}
			continue
		}
		ev.Info = bytes.Clone(ev.Info)
		r.byID[ev.ID] = ev
		k := key{ev.Kind, ev.Key}
		r.keys[k] = append(r.keys[k], arrival{ev, now, node})
	}
	close(r.changed)
	r.changed = make(chan struct{})
}

func sameEvent(a, b broker.OccupancyEvent) bool {
	return a.ID == b.ID && a.Kind == b.Kind && a.Key == b.Key && a.Occupied == b.Occupied &&
		a.TimeMs == b.TimeMs && bytes.Equal(a.Info, b.Info)
}

// seq returns a copy of the key's events in the order first handed over.
func (r *recorder) seq(k key) []arrival {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]arrival(nil), r.keys[k]...)
}

// waitFor waits until cond holds, checked after every accepted call.
func (r *recorder) waitFor(what string, cond func() bool) {
	r.t.Helper()
	deadline := time.After(waitTimeout)
	for {
		r.mu.Lock()
		ch := r.changed
		r.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			r.t.Fatalf("gave up waiting for %s", what)
		}
	}
}

// waitLen waits until k has n events and returns them.
func (r *recorder) waitLen(k key, n int) []arrival {
	r.t.Helper()
	var s []arrival
	r.waitFor(fmt.Sprintf("%d events of %v", n, k), func() bool {
		s = r.seq(k)
		return len(s) >= n
	})
	return s
}

// waitVacated waits until k has a vacated event made by a release at or
// after since (its time is when the last holder left), and returns k's
// events: everything made before it has come by then.
func (r *recorder) waitVacated(k key, since time.Time) []arrival {
	r.t.Helper()
	from := since.UnixMilli() - 1 // the backend's clock counts whole milliseconds
	var s []arrival
	r.waitFor(fmt.Sprintf("%v vacated after %v", k, since.Format(time.StampMilli)), func() bool {
		s = r.seq(k)
		for _, a := range s {
			if !a.Occupied && a.TimeMs >= from {
				return true
			}
		}
		return false
	})
	return s
}

// checkSeq fails the test unless k's events alternate from occupied, go
// forward in time, and are want (occupied flags) when want is not nil.
func (r *recorder) checkSeq(k key, want ...bool) {
	r.t.Helper()
	s := r.seq(k)
	if err := alternates(s); err != nil {
		r.t.Fatalf("%v: %v", k, err)
	}
	if want != nil && len(s) != len(want) {
		r.t.Fatalf("%v: events %s, want %s", k, describe(s), describeFlags(want))
	}
}

// alternates checks the order of one key's events.
func alternates(s []arrival) error {
	for i, a := range s {
		if a.Occupied != (i%2 == 0) {
			return fmt.Errorf("events %s do not alternate from occupied", describe(s))
		}
		if i > 0 && a.TimeMs < s[i-1].TimeMs {
			return fmt.Errorf("events %s go back in time", describe(s))
		}
	}
	return nil
}

func describe(s []arrival) string {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, a := range s {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s@%d(%s,node %d)", typeName(a.Occupied), a.TimeMs, a.ID, a.node)
	}
	b.WriteByte(']')
	return b.String()
}

func describeFlags(want []bool) string {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, o := range want {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(typeName(o))
	}
	b.WriteByte(']')
	return b.String()
}

func typeName(occupied bool) string {
	if occupied {
		return "occupied"
	}
	return "vacated"
}
