package gyre

import "github.com/gyrehq/gyre/broker"

// burstMaxPublications bounds how long a burst holds writers back: after
// that many publications it wakes them and goes on.
const burstMaxPublications = 256

// A Burst publishes a run of publications and wakes each connection's
// writer once, when it is flushed, instead of once per publication: the
// publications a connection gets from the run then leave in one write,
// and writes are most of the cost of a fan-out. The HTTP API publishes
// its batches and broadcasts through one.
//
// It gains with brokers that deliver before Publish returns (the memory
// broker); with others its Publish is Node.Publish. A Burst is for one
// goroutine at a time. Flush it when the run ends: until then the
// connections it held have not been woken (it also flushes itself every
// 256 publications).
type Burst struct {
	n       *Node
	handler burstHandler
	// writers the burst queued messages to without waking them.
	writers []*writer
	count   int
}

// burstHandler receives the publications of a Burst from the broker.
type burstHandler struct{ b *Burst }

// NewBurst returns a Burst publishing through n.
func (n *Node) NewBurst() *Burst {
	b := &Burst{n: n}
	b.handler.b = b
	return b
}

// Publish is Node.Publish, except that connections are woken at the next
// Flush.
func (b *Burst) Publish(channel string, data []byte, opts ...PublishOption) (PublishResult, error) {
	chOpts, err := b.n.rules.Load().lookup(channel)
	if err != nil {
		return PublishResult{}, err
	}
	if b.count++; b.count > burstMaxPublications {
		b.Flush()
		b.count = 1
	}
	return b.n.publish(channel, data, chOpts, applyPublishOptions(opts), b)
}

// Flush wakes the connections the burst queued messages for. The Burst
// can be used again afterwards.
func (b *Burst) Flush() {
	for _, w := range b.writers {
		w.release(b)
	}
	clear(b.writers)
	b.writers = b.writers[:0]
	b.count = 0
}

func (h *burstHandler) HandlePublication(channel string, pub *broker.Publication, sp broker.StreamPosition, delta bool, prev *broker.Publication) error {
	h.b.n.handlePublication(channel, pub, delta, prev, h.b)
	return nil
}
