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
	// run and encs are PublishMany's scratch, kept between runs.
	run  []broker.RunItem
	encs []encodedPush
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
	b.tally(1)
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

// PublishItem is one publication of Burst.PublishMany: what to publish,
// and, once PublishMany returns, where it landed or why it did not.
type PublishItem struct {
	Data    []byte
	Options PublishOptions

	Result PublishResult
	Err    error
}

// PublishMany publishes items to channel in order, as many Publish calls
// would, and sets each item's Result or Err. With a broker that delivers
// before Publish returns (the memory broker), the items go to the broker
// in runs of up to 256 and each subscriber is given its share of a run in
// one step: one queue operation per subscriber per run instead of one per
// publication, and no other publisher's publication comes between them.
func (b *Burst) PublishMany(channel string, items []PublishItem) {
	chOpts, err := b.n.rules.Load().lookup(channel)
	if err != nil {
		for i := range items {
			items[i].Err = err
		}
		return
	}
	if b.n.direct == nil || len(items) == 1 {
		for i := range items {
			it := &items[i]
			b.tally(1)
			it.Result, it.Err = b.n.publish(channel, it.Data, chOpts, it.Options, b)
		}
		return
	}
	for len(items) > 0 {
		k := min(len(items), burstMaxPublications)
		b.tally(k)
		b.publishRun(channel, chOpts, items[:k])
		items = items[k:]
	}
}

// tally counts k publications about to be queued, waking the held
// writers first when they would take the burst past burstMaxPublications.
func (b *Burst) tally(k int) {
	if b.count > 0 && b.count+k > burstMaxPublications {
		b.Flush()
	}
	b.count += k
}

// publishRun publishes items through the direct broker in one call.
func (b *Burst) publishRun(channel string, chOpts *ChannelOptions, items []PublishItem) {
	run := b.run[:0]
	for i := range items {
		run = append(run, broker.RunItem{Data: items[i].Data, Opts: b.n.brokerPublishOptions(channel, chOpts, items[i].Options)})
	}
	err := b.n.direct.PublishRunTo(&b.handler, channel, run)
	for i := range items {
		if err != nil {
			items[i].Err = publishError(channel, err)
			continue
		}
		items[i].Result = PublishResult{StreamPosition: run[i].Position, Suppressed: run[i].Suppressed}
	}
	clear(run) // the scratch must not keep the payloads alive
	b.run = run[:0]
}

func (h *burstHandler) HandleRun(channel string, run []broker.RunPublication) error {
	h.b.n.broadcastRun(channel, run, h.b)
	return nil
}

func (h *burstHandler) HandlePublication(channel string, pub *broker.Publication, sp broker.StreamPosition, delta bool, prev *broker.Publication) error {
	h.b.n.handlePublication(channel, pub, delta, prev, h.b)
	return nil
}
