package backlog

import (
	"sync/atomic"
	"testing"
	"time"
)

type recorder struct{ calls []bool }

func (r *recorder) HandleBacklog(behind bool, _ int) { r.calls = append(r.calls, behind) }

// TestLook: a queue is behind when it fills up or stays non-empty past
// After (TestRateBehind: or holds more than Work of work), and the
// handler hears once per change of the whole broker.
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
	a.Emptied()
	m.look(now)
	if len(r.calls) != 1 {
		t.Fatalf("caught up while b is behind: %v", r.calls)
	}
	lb = 3 // a little, emptied since, no rate known: not behind
	b.Emptied()
	m.look(time.Now())
	if len(r.calls) != 2 || r.calls[1] {
		t.Fatalf("calls %v, want [true false]", r.calls)
	}

	// Non-empty since it was last seen empty, for longer than After.
	m.look(time.Now().Add(2 * After))
	if len(r.calls) != 3 || !r.calls[2] {
		t.Fatalf("calls %v, want behind after %v", r.calls, After)
	}
	b.Stop()
	m.look(time.Now().Add(2 * After))
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
	q.emptied.Store(now.UnixNano()) // just emptied, at the test's clock
	if q.behind(100, now) {
		t.Fatal("100 messages, a tenth of a second of work, counted as behind")
	}
	if !q.behind(int(1000*Work.Seconds())+10, now) {
		t.Fatalf("more than %v of work not counted as behind", Work)
	}
}

// TestHysteresis: a queue behind stays so until it holds half of what
// made it behind.
func TestHysteresis(t *testing.T) {
	m := Meter{manual: true}
	q := NewQueue(&m, 100, func() int { return 0 })
	now := time.Now()
	q.emptied.Store(now.UnixNano())
	for _, tc := range []struct {
		n    int
		want bool
	}{{80, true}, {60, true}, {40, true}, {37, false}, {60, false}, {75, true}} {
		if got := q.behind(tc.n, now); got != tc.want {
			t.Fatalf("%d queued: behind %v, want %v", tc.n, got, tc.want)
		}
	}
}

// TestProbe: with a probe, a queue is behind while a probe has been on
// its way longer than After, although the queue itself holds little, and
// caught up once one came back quickly; a lost probe does not keep it
// behind.
func TestProbe(t *testing.T) {
	m := Meter{manual: true}
	q := NewQueue(&m, 100, func() int { return 0 })
	var sent []int64
	q.SetProbe(func(at int64) { sent = append(sent, at) })
	now := time.Now()
	q.emptied.Store(now.UnixNano())
	if q.behind(1, now) || len(sent) != 1 {
		t.Fatalf("behind at once, or no probe sent (%d)", len(sent))
	}
	if q.behind(1, now.Add(After/2)) || len(sent) != 1 {
		t.Fatal("behind with a probe on its way for less than After, or a second probe sent")
	}
	q.emptied.Store(now.Add(After).UnixNano())
	if !q.behind(1, now.Add(After+time.Millisecond)) {
		t.Fatal("not behind with a probe on its way for longer than After")
	}
	q.Probed(sent[0])
	if q.probeSent.Load() != 0 {
		t.Fatal("the probe that came back is still on its way")
	}
	q.probeLag.Store(int64(After + time.Millisecond)) // as the test's clock has it
	// It took long: behind until a probe comes back quickly.
	later := now.Add(2 * After)
	q.emptied.Store(later.UnixNano())
	if !q.behind(1, later) || len(sent) != 2 {
		t.Fatalf("caught up although the last probe took %v; probes %d", time.Duration(q.probeLag.Load()), len(sent))
	}
	q.probeSent.Store(0)
	q.probeLag.Store(int64(time.Millisecond))
	if q.behind(1, later) {
		t.Fatal("still behind after a quick probe")
	}
	// A probe that never comes back is given up.
	q.ProbeLost(q.probeSent.Load())
	q.probeSent.Store(later.UnixNano())
	if q.behind(1, later.Add(probeGiveUp+time.Second)) && q.probeSent.Load() == later.UnixNano() {
		t.Fatal("a lost probe was not given up")
	}
}
