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
	// After is how long a queue must stay non-empty before it counts as
	// behind. A broadcast to thousands of channels fills a queue for a
	// few milliseconds and is no backlog; a queue that does not empty for
	// this long is one. Every moment of it lets publishers add what the
	// node needs more moments to hand over, so it is short.
	After = 50 * time.Millisecond
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
}

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
}

// NewQueue watches a queue of capacity capacity whose current length
// length returns (len of a channel). Its reader calls Emptied whenever it
// finds it empty, and Stop when it stops reading.
func NewQueue(m *Meter, capacity int, length func() int) *Queue {
	q := &Queue{m: m, len: length, full: max(1, capacity*3/4)}
	q.Emptied()
	m.mu.Lock()
	m.queues = append(m.queues, q)
	if !m.watching {
		m.watching = true
		go m.watch()
	}
	m.mu.Unlock()
	return q
}

// Emptied records that the reader took everything there was.
func (q *Queue) Emptied() { q.emptied.Store(time.Now().UnixNano()) }

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
}

// watch looks at the queues until there are none.
func (m *Meter) watch() {
	t := time.NewTicker(every)
	defer t.Stop()
	for range t.C {
		if !m.look(time.Now()) {
			return
		}
	}
}

// look tells the handler of a change and reports whether any queue is
// left to watch.
func (m *Meter) look(now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	behind, queued := false, 0
	for _, q := range m.queues {
		n := q.len()
		if n >= q.full || (n > 0 && now.UnixNano()-q.emptied.Load() >= int64(After)) {
			behind = true
			queued += n
		}
	}
	if behind != m.behind {
		m.behind = behind
		if m.h != nil {
			m.h.HandleBacklog(behind, queued)
		}
	}
	if len(m.queues) == 0 {
		m.watching = false
		return false
	}
	return true
}
