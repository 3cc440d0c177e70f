// Package backlog tells a node when a broker's delivery to it falls
// behind: when what the broker received has waited in its queues for the
// engine longer than a moment. The node then holds publishes back across
// the cluster until the queues drain, so that it catches up before Redis
// or NATS drop what it cannot take (see broker.BacklogHandler).
package backlog

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/gyrehq/gyre/broker"
)

const (
	// After is how much work a queue may hold before it counts as
	// behind: what it holds over the rate its reader has been taking
	// messages. A broadcast to thousands of channels, or a publication to
	// tens of thousands of subscribers that keeps the next ones waiting,
	// is no backlog, and what waits goes out in fewer, larger writes,
	// which is what lets a busy node keep up. More than this is one:
	// Redis drops a pub/sub connection whose backlog passes its I/O
	// timeout (4 s), and publishers add to it faster than it drains.
	After = 500 * time.Millisecond
	// every is how often the queues are looked at. A queue's reader is
	// busy handing over when it falls behind (one batch to thousands of
	// subscribers can take longer than After), so the looking is done by
	// a goroutine of its own, which costs nothing while no queue is.
	every = 10 * time.Millisecond
)

// Meter watches the queues of one broker: the handler is told behind
// when the first of them falls behind, and caught up when none is. Its
// zero value tells nobody.
type Meter struct {
	mu     sync.Mutex
	h      broker.BacklogHandler
	queues []*Queue
	behind bool
	// watching is set while the goroutine that looks at the queues runs:
	// from the first queue added until the last one stopped.
	watching bool
	// quiet counts the looks in a row that found every queue empty; after
	// idleLooks of them the watcher waits for kick, which the readers
	// send after each batch, instead of ticking.
	quiet int
	kick  chan struct{}
	// manual: no watcher goroutine; tests call look themselves.
	manual bool
}

// idleLooks is how many looks at empty queues park the watcher: an idle
// node does not wake a hundred times a second.
const idleLooks = 10

// SetHandler makes h (an EventHandler, when it implements
// broker.BacklogHandler) the one told; nil or another handler tells
// nobody.
func (m *Meter) SetHandler(h any) {
	m.mu.Lock()
	m.h, _ = h.(broker.BacklogHandler)
	m.mu.Unlock()
}

// Queue is one queue of a Meter, read by one goroutine.
type Queue struct {
	m   *Meter
	len func() int
	// full is the length at which the queue counts as behind at once:
	// its writer is about to block or drop.
	full int
	// taken counts the messages the reader took; the watcher turns it
	// into rate, the messages it takes per second while busy (smoothed
	// over about After), seen at lastTaken and lastAt.
	taken     atomic.Int64
	lastTaken int64
	lastAt    time.Time
	rate      float64
	// isBehind is what the last look found.
	isBehind bool
}

// NewQueue watches a queue of capacity capacity whose current length
// length returns (len of a channel). Its reader calls Took with every
// batch it takes, and Stop when it stops reading.
func NewQueue(m *Meter, capacity int, length func() int) *Queue {
	q := &Queue{m: m, len: length, full: max(1, capacity*3/4)}
	m.mu.Lock()
	m.queues = append(m.queues, q)
	if m.kick == nil {
		m.kick = make(chan struct{}, 1)
	}
	if !m.watching && !m.manual {
		m.watching = true
		go m.watch()
	}
	m.mu.Unlock()
	return q
}

// Took is called by the reader with each batch of n messages it takes,
// before handing it over: it wakes the watcher if it waits.
func (q *Queue) Took(n int) {
	q.taken.Add(int64(n))
	select {
	case q.m.kick <- struct{}{}:
	default:
	}
}

// Stop ends q's part: a queue that stops while behind no longer holds
// the node back.
func (q *Queue) Stop() {
	m := q.m
	m.mu.Lock()
	for i, o := range m.queues {
		if o == q {
			m.queues = append(m.queues[:i], m.queues[i+1:]...)
			break
		}
	}
	m.mu.Unlock()
	q.Took(0) // a waiting watcher sees whether any queue is left
}

// watch looks at the queues until there are none, every 10 ms while
// any has been busy lately.
func (m *Meter) watch() {
	t := time.NewTicker(every)
	defer t.Stop()
	for range t.C {
		left, idle := m.look(time.Now())
		if !left {
			return
		}
		if idle {
			t.Stop()
			<-m.kick
			t.Reset(every)
		}
	}
}

// look tells the handler of a change and reports whether any queue is
// left to watch, and whether they have all been empty for idleLooks
// looks (the watcher may then wait for a kick).
func (m *Meter) look(now time.Time) (left, idle bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	behind, queued, busy := false, 0, false
	for _, q := range m.queues {
		n := q.len()
		busy = busy || n > 0
		if q.behind(n, now) {
			behind = true
			queued += n
		}
	}
	if busy || behind {
		m.quiet = 0
	} else {
		m.quiet++
	}
	if behind != m.behind {
		m.behind = behind
		if m.h != nil {
			m.h.HandleBacklog(behind, queued)
		}
	}
	if len(m.queues) == 0 {
		m.watching = false
		return false, false
	}
	if m.quiet >= idleLooks {
		m.quiet = 0
		return true, true
	}
	return true, false
}

// behind tells whether a queue holding n messages at now is behind: it
// is nearly full, or what it holds would take its reader longer than
// After at the rate it has been taking messages. A queue that never
// empties but stays short is a busy reader keeping up, not one behind.
//
// Once behind, a queue stays so until it holds half as much, so that a
// node near the line does not say behind and caught up at every look.
func (q *Queue) behind(n int, now time.Time) bool {
	q.measure(n, now)
	full, work := float64(q.full), After.Seconds()
	if q.isBehind {
		full, work = full/2, work/2
	}
	q.isBehind = n > 0 && (float64(n) >= full || (q.rate > 0 && float64(n) >= q.rate*work))
	return q.isBehind
}

// measure updates the rate from what the reader took since the last look
// (n: what the queue holds now). Time with nothing to take does not
// count, so that the rate is that of a busy reader, not lowered by idle
// time; time spent handing a batch over does.
func (q *Queue) measure(n int, now time.Time) {
	taken := q.taken.Load()
	if q.lastAt.IsZero() {
		q.lastTaken, q.lastAt = taken, now
		return
	}
	d := taken - q.lastTaken
	dt := now.Sub(q.lastAt)
	if d == 0 || dt <= 0 {
		if d == 0 && n == 0 {
			q.lastAt = now // idle
		}
		return
	}
	r := float64(d) / dt.Seconds()
	w := min(1, float64(dt)/float64(After))
	if q.rate == 0 {
		w = 1
	}
	q.rate += w * (r - q.rate)
	q.lastTaken, q.lastAt = taken, now
}
