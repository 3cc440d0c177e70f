package gyre

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gyrehq/gyre/internal/controlpb"
)

// Backpressure across the cluster. Every publication reaches every node
// through the broker, and each node hands what it receives to its
// subscribers at its own pace. A node that cannot keep up queues, then
// Redis or NATS hold what it has not read, and past their limits they drop
// it: Redis closes the connection (the node resubscribes and every channel
// it carried counts as lost), NATS drops messages. Subscribers of
// recoverable channels are told and recover; the others lose publications.
//
// So a node whose broker queues stop emptying (broker.BacklogHandler) says
// so to the others, and every node holds its publishes back until it
// caught up: a publish waits up to Config.PublishHoldTimeout and is then
// refused with ErrorTooManyRequests (111, temporary), which an API client
// can retry. Publishers are slowed, or told, before any subscriber loses
// anything. A node repeats its announcement while behind, and the others
// forget it when it stops (it crashed) or leaves.
const (
	backlogRenew  = 500 * time.Millisecond
	backlogExpiry = 2 * time.Second
)

type backpressure struct {
	n       *Node
	timeout time.Duration // Config.PublishHoldTimeout; negative never holds

	// holding is true while any node is behind: the publish path reads
	// only it.
	holding atomic.Bool

	mu sync.Mutex
	// local counts this node's broker pub/subs that are behind (the
	// broker's and the map broker's); since is when the first fell behind.
	local int
	since time.Time
	// remote are the other nodes behind, by id, with when their last
	// announcement lapses.
	remote map[string]time.Time
	// clear is closed when nothing is behind any more; a new one is made
	// when something falls behind.
	clear chan struct{}
	lapse *time.Timer

	// Publishes held and refused during this node's episode, for its
	// closing log line.
	held, refused atomic.Int64
}

func newBackpressure(n *Node, timeout time.Duration) *backpressure {
	c := make(chan struct{})
	close(c)
	return &backpressure{n: n, timeout: timeout, remote: make(map[string]time.Time), clear: c}
}

// admit returns when nothing in the cluster is behind, or refuses the
// publish with ErrorTooManyRequests once the hold timeout passed.
func (bp *backpressure) admit() error {
	if !bp.holding.Load() || bp.timeout < 0 {
		return nil
	}
	start := time.Now()
	bp.mu.Lock()
	clear := bp.clear
	bp.mu.Unlock()
	t := time.NewTimer(bp.timeout)
	defer t.Stop()
	refused := false
	select {
	case <-clear:
	case <-t.C:
		refused = bp.holding.Load()
	case <-bp.n.done:
	}
	bp.n.obs.PublishHeld(time.Since(start), refused)
	if refused {
		bp.refused.Add(1)
		return ErrorTooManyRequests
	}
	bp.held.Add(1)
	return nil
}

// setLocal is broker.BacklogHandler for this node's brokers.
func (bp *backpressure) setLocal(behind bool, queued int) {
	n := bp.n
	bp.mu.Lock()
	was := bp.local > 0
	if behind {
		bp.local++
	} else if bp.local > 0 {
		bp.local--
	}
	now := bp.local > 0
	if now && !was {
		bp.since = time.Now()
		bp.held.Store(0)
		bp.refused.Store(0)
	}
	since := bp.since
	bp.updateLocked()
	bp.mu.Unlock()
	if now == was {
		return
	}
	n.obs.BrokerBehind(now)
	if now {
		n.log.Warn("broker delivery to this node is behind; publishes are held across the cluster until it catches up",
			"queued", queued, "hold_timeout", bp.timeout)
	} else {
		n.log.Info("broker delivery to this node caught up", "behind_for", time.Since(since).Round(time.Millisecond),
			"publishes_held", bp.held.Load(), "publishes_refused", bp.refused.Load())
	}
	// Not on the broker's goroutine: the announcement is a publish.
	go bp.announce(now, queued)
}

// renew repeats this node's announcement while it is behind.
func (bp *backpressure) renew() {
	bp.mu.Lock()
	behind := bp.local > 0
	bp.mu.Unlock()
	if behind {
		bp.announce(true, 0)
	}
}

func (bp *backpressure) announce(behind bool, queued int) {
	n := bp.n
	if n.closing.Load() {
		return
	}
	err := n.sendControl(&controlpb.Command{Backlog: &controlpb.Backlog{Behind: behind, Queued: uint32(min(queued, 1<<31))}})
	if err != nil {
		n.fails.Add("announce backlog", slog.LevelWarn, "announce backlog", "behind", behind, "error", err)
	}
}

// setRemote records what node id said about its backlog.
func (bp *backpressure) setRemote(id string, behind bool) {
	if id == bp.n.id {
		return
	}
	bp.mu.Lock()
	defer bp.mu.Unlock()
	_, was := bp.remote[id]
	if behind {
		bp.remote[id] = time.Now().Add(backlogExpiry)
		if !was {
			bp.n.log.Info("a node is behind; publishes are held until it catches up", "node", id)
		}
	} else {
		delete(bp.remote, id)
	}
	bp.updateLocked()
}

// updateLocked sets holding from the local count and the remote nodes
// whose announcement has not lapsed, and arms the timer that drops the
// next to lapse.
func (bp *backpressure) updateLocked() {
	now := time.Now()
	var next time.Time
	for id, until := range bp.remote {
		if !until.After(now) {
			delete(bp.remote, id)
			bp.n.log.Warn("a node that was behind stopped saying so; publishes go on", "node", id)
			continue
		}
		if next.IsZero() || until.Before(next) {
			next = until
		}
	}
	hold := bp.local > 0 || len(bp.remote) > 0
	switch {
	case hold && !bp.holding.Load():
		bp.clear = make(chan struct{})
		bp.holding.Store(true)
	case !hold && bp.holding.Load():
		bp.holding.Store(false)
		close(bp.clear)
	}
	if !next.IsZero() {
		d := next.Sub(now)
		if bp.lapse == nil {
			bp.lapse = time.AfterFunc(d, bp.lapsed)
		} else {
			bp.lapse.Reset(d)
		}
	}
}

func (bp *backpressure) lapsed() {
	bp.mu.Lock()
	bp.updateLocked()
	bp.mu.Unlock()
}

// HandleBacklog implements broker.BacklogHandler.
func (e *brokerEvents) HandleBacklog(behind bool, queued int) {
	e.n.backpressure.setLocal(behind, queued)
}
