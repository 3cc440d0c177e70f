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
	// After is how long a queue may stay non-empty before it counts as
	// behind. A broadcast to thousands of channels fills a queue for a
	// few milliseconds, and a publication to tens of thousands of
	// subscribers keeps the next ones waiting for tens: that is no
	// backlog, and what waits goes out in fewer, larger writes. A queue
	// that does not empty for this long is one, and behind a Redis queue
	// that never empties there may be seconds more in Redis's buffer for
	// the connection, which the queue's length does not show: Redis drops
	// a pub/sub connection whose backlog passes its I/O timeout (4 s).
	After = 250 * time.Millisecond
	// Work is how much work a queue may hold, at the rate its reader has
	// been taking messages: a flood into a large queue (NATS's) is behind
	// at once, before it stays non-empty for After.
	Work = 500 * time.Millisecond
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
	// emptied is when the reader last found the queue empty, in
	// nanoseconds since the Unix epoch.
	emptied atomic.Int64
	// taken counts the messages the reader took; the watcher turns it
	// into rate, the messages it takes per second while busy (smoothed
	// over about Work), seen at lastTaken and lastAt.
	taken     atomic.Int64
	lastTaken int64
	lastAt    time.Time
	rate      float64
	// isBehind is what the last look found.
	isBehind bool

	// probe, when set, sends a message that comes back through the same
	// stream, behind whatever waits for the reader in the server's
	// buffers, where the queue's length does not show it (Redis): the
	// reader calls Probed when it arrives. probeSent is when the one on
	// its way was sent (0: none), probeLag how long the last one took,
	// both in nanoseconds.
	probe     func(sent int64)
	probeSent atomic.Int64
	probeLag  atomic.Int64
}

// SetProbe makes the watcher send probes with send while the queue is
// busy (see Queue.probe). send must not block.
func (q *Queue) SetProbe(send func(sent int64)) {
	q.m.mu.Lock()
	q.probe = send
	q.m.mu.Unlock()
}

// Probed is called by the reader when the probe sent at sent (as given
// to the send function) arrived.
func (q *Queue) Probed(sent int64) {
	if q.probeSent.CompareAndSwap(sent, 0) {
		q.probeLag.Store(time.Now().UnixNano() - sent)
	}
}

// Sent is when the probe on its way was sent, 0 for none.
func (q *Queue) Sent() int64 { return q.probeSent.Load() }

// Probing marks a probe sent at sent as on its way, as the watcher does
// before it sends one (for tests of a probe's path).
func (q *Queue) Probing(sent int64) { q.probeSent.Store(sent) }

// Lag is how long the last probe that came back took.
func (q *Queue) Lag() time.Duration { return time.Duration(q.probeLag.Load()) }

// ProbeLost is called when the probe sent at sent cannot arrive: its
// send failed, or the connection it was to come back on closed.
func (q *Queue) ProbeLost(sent int64) { q.probeSent.CompareAndSwap(sent, 0) }

// probeGiveUp is how long a probe may be on its way before it counts as
// lost rather than late: Redis drops a connection whose backlog passes
// its I/O timeout well before, and a lost probe must not keep the node
// behind.
const probeGiveUp = 5 * time.Second

// probing sends a probe if none is on its way and reports how long the
// one on its way has been, or how long the last one took.
func (q *Queue) probing(now time.Time) time.Duration {
	if q.probe == nil {
		return 0
	}
	sent := q.probeSent.Load()
	if sent != 0 && now.UnixNano()-sent > int64(probeGiveUp) {
		q.ProbeLost(sent)
		sent = 0
	}
	if sent == 0 {
		at := now.UnixNano()
		q.probeSent.Store(at)
		q.probe(at)
		return time.Duration(q.probeLag.Load())
	}
	return max(time.Duration(now.UnixNano()-sent), time.Duration(q.probeLag.Load()))
}

// NewQueue watches a queue of capacity capacity whose current length
// length returns (len of a channel). Its reader calls Took with every
// batch it takes, Emptied whenever it finds the queue empty, and Stop
// when it stops reading.
func NewQueue(m *Meter, capacity int, length func() int) *Queue {
	q := &Queue{m: m, len: length, full: max(1, capacity*3/4)}
	q.Emptied()
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

// Emptied records that the reader took everything there was.
func (q *Queue) Emptied() { q.emptied.Store(time.Now().UnixNano()) }

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
// is nearly full, it has not emptied for After, or what it holds would
// take its reader longer than Work at the rate it has been taking
// messages.
//
// Once behind, a queue stays so until it holds half as much, so that a
// node near the line does not say behind and caught up at every look.
//
// With a probe (SetProbe), a queue is also behind while a probe has been
// on its way, or the last one took, longer than After: what waits in the
// server's buffers for the reader counts too. A probe is sent while the
// queue holds anything or is behind, one at a time.
func (q *Queue) behind(n int, now time.Time) bool {
	q.measure(n, now)
	full, work, lag := float64(q.full), Work.Seconds(), After
	if q.isBehind {
		full, work, lag = full/2, work/2, lag/2
	}
	var probed time.Duration
	if n > 0 || q.isBehind {
		probed = q.probing(now)
	} else {
		q.probeLag.Store(0) // idle: the last probe's lag is old news
	}
	q.isBehind = (n > 0 && (float64(n) >= full ||
		now.UnixNano()-q.emptied.Load() >= int64(After) ||
		(q.rate > 0 && float64(n) >= q.rate*work))) ||
		(q.probe != nil && probed >= lag)
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
	w := min(1, float64(dt)/float64(Work))
	if q.rate == 0 {
		w = 1
	}
	q.rate += w * (r - q.rate)
	q.lastTaken, q.lastAt = taken, now
}
