package backlog

import (
	"sync/atomic"
	"testing"
	"time"
)

type recorder struct{ calls []bool }

func (r *recorder) HandleBacklog(behind bool, _ int) { r.calls = append(r.calls, behind) }

// TestLook: a queue is behind when it fills up (TestRateBehind: or holds
// more than After of work), and the handler hears once per change of the
// whole broker.
func TestLook(t *testing.T) {
	m := Meter{manual: true}
	r := new(recorder)
	m.SetHandler(r)
	var la, lb int
	a := NewQueue(&m, 100, func() int { return la })
	b := NewQueue(&m, 100, func() int { return lb })
	now := time.Now()

	la = 10 // non-empty, but only just
	m.look(now)
	if len(r.calls) != 0 {
		t.Fatalf("behind at once: %v", r.calls)
	}
	la, lb = 80, 90 // three quarters full
	m.look(now)
	if len(r.calls) != 1 || !r.calls[0] {
		t.Fatalf("calls %v, want [true]", r.calls)
	}
	la = 0
	m.look(now)
	if len(r.calls) != 1 {
		t.Fatalf("caught up while b is behind: %v", r.calls)
	}
	lb = 3 // a little, and no rate known: not behind
	m.look(time.Now())
	if len(r.calls) != 2 || r.calls[1] {
		t.Fatalf("calls %v, want [true false]", r.calls)
	}

	lb = 80
	m.look(time.Now())
	if len(r.calls) != 3 || !r.calls[2] {
		t.Fatalf("calls %v, want behind again", r.calls)
	}
	b.Stop()
	m.look(time.Now())
	if len(r.calls) != 4 || r.calls[3] {
		t.Fatalf("calls %v, want caught up once the queue stopped", r.calls)
	}
	a.Stop()
	if left, _ := m.look(time.Now()); left {
		t.Fatal("still watching without queues")
	}
}

// TestMeterWithoutHandler: an EventHandler that does not implement
// broker.BacklogHandler is told nothing.
func TestMeterWithoutHandler(t *testing.T) {
	m := Meter{manual: true}
	m.SetHandler(struct{}{})
	q := NewQueue(&m, 4, func() int { return 4 })
	m.look(time.Now())
	q.Stop()
}

// TestIdleWatcher: the watcher goes idle once the queues stayed empty,
// a reader that takes a batch wakes it, and it ends with the last queue.
func TestIdleWatcher(t *testing.T) {
	var m Meter
	r := new(recorder)
	m.SetHandler(r)
	var n atomic.Int64
	q := NewQueue(&m, 100, func() int { return int(n.Load()) })
	// Long enough for idleLooks looks at the empty queue: the watcher
	// waits for a kick now.
	time.Sleep(3 * idleLooks * every)
	n.Store(90)
	q.Took(1)
	waitFor(t, &m, "the watcher to wake and see the queue behind", func() bool { return m.behind })
	q.Stop()
	waitFor(t, &m, "the watcher to end with the last queue", func() bool { return !m.watching })
}

func waitFor(t *testing.T, m *Meter, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		m.mu.Lock()
		ok := cond()
		m.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRateBehind: a queue that holds more than its reader takes in After
// is behind at once; one that holds a little while its reader is slow per
// message is not.
func TestRateBehind(t *testing.T) {
	m := Meter{manual: true}
	var n int
	q := NewQueue(&m, 1<<16, func() int { return n })
	now := time.Now()
	q.measure(0, now)
	// The reader takes 1,000 messages a second.
	for i := 1; i <= 10; i++ {
		q.Took(100)
		now = now.Add(100 * time.Millisecond)
		q.measure(1, now)
	}
	if q.rate < 900 || q.rate > 1100 {
		t.Fatalf("rate %.0f/s, want about 1,000", q.rate)
	}
	if q.behind(100, now) {
		t.Fatal("100 messages, a tenth of a second of work, counted as behind")
	}
	if !q.behind(int(1000*After.Seconds())+10, now) {
		t.Fatalf("more than %v of work not counted as behind", After)
	}
}

// TestHysteresis: a queue behind stays so until it holds half of what
// made it behind.
func TestHysteresis(t *testing.T) {
	m := Meter{manual: true}
	q := NewQueue(&m, 100, func() int { return 0 })
	now := time.Now()
	for _, tc := range []struct {
		n    int
		want bool
	}{{80, true}, {60, true}, {40, true}, {37, false}, {60, false}, {75, true}} {
		if got := q.behind(tc.n, now); got != tc.want {
			t.Fatalf("%d queued: behind %v, want %v", tc.n, got, tc.want)
		}
	}
}
