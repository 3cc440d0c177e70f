package gyre

import "github.com/gyrehq/gyre/broker"

// burstMaxPublications bounds how long a burst holds writers back: after
// that many publications it wakes them and goes on. It is also how many
// items go to the broker in one call.
const burstMaxPublications = 256

// PublishItem is one publication of PublishMany: what to publish, and,
// once PublishMany returns, where it landed or why it did not.
type PublishItem struct {
	Channel string
	Data    []byte
	Options PublishOptions

	Result PublishResult
	Err    error
}

// PublishMany publishes items in order, as many Publish calls would, and
// sets each item's Result or Err. It is how a batch should be published:
//
//   - the broker gets the items together, up to 256 at a time: Redis
//     receives them pipelined, in one round trip per server, instead of one
//     round trip each; the memory broker publishes each stretch of
//     consecutive items of one channel under one hold of the channel's
//     order, so that no other publisher's publication comes between them;
//   - each connection is woken once for all the publications it gets from
//     those 256, so that they leave in one write, and a subscriber is given
//     a stretch of its channel's publications in one queue operation
//     (with the memory broker; with Redis the same happens when the
//     publications come back from pub/sub).
//
// Per channel the items keep their order; items of different channels are
// not ordered relative to each other on every broker. An item of an
// unknown namespace gets ErrorUnknownChannel and the others are published.
func (n *Node) PublishMany(items []PublishItem) {
	b := n.getBurst()
	b.publish(items)
	n.putBurst(b)
}

// A burst publishes a batch and fans out what the broker hands back for
// it (with a broker that delivers before publishing returns), or what a
// broker hands over in one call: the writers of the connections it queued
// messages for are woken once, when it is done, instead of once per
// message. It also holds the scratch of a fan-out. A burst is for one
// goroutine at a time; bursts are pooled per node.
type burst struct {
	n *Node
	// wake holds the writers queued to and not woken yet.
	wake wakeList
	// count is the number of publications queued since the last wake.
	count int
	// handler receives the deliveries of the burst's own publications
	// from a DirectPublisher.
	handler burstHandler
	// scratch kept between uses.
	items []broker.PublishItem
	encs  []encodedPush
	whole wholeRuns
}

// burstHandler is a burst as the broker.RunHandler of its publications.
type burstHandler struct{ b *burst }

func (n *Node) getBurst() *burst {
	if b, ok := n.bursts.Get().(*burst); ok {
		return b
	}
	b := &burst{n: n}
	b.handler.b = b
	return b
}

// putBurst wakes what b holds and returns it to the pool.
func (n *Node) putBurst(b *burst) {
	b.flush()
	n.bursts.Put(b)
}

// flush wakes the writers the burst queued messages for.
func (b *burst) flush() {
	b.wake.wakeAll()
	b.count = 0
}

// tally counts k publications about to be queued, waking the held
// writers first when they would take the burst past burstMaxPublications.
func (b *burst) tally(k int) {
	if b.count > 0 && b.count+k > burstMaxPublications {
		b.flush()
	}
	b.count += k
}

// publish publishes items through the broker, burstMaxPublications at a
// time.
func (b *burst) publish(items []PublishItem) {
	rules := b.n.rules.Load()
	for len(items) > 0 {
		k := min(len(items), burstMaxPublications)
		b.publishChunk(rules, items[:k])
		items = items[k:]
	}
}

func (b *burst) publishChunk(rules *channelRules, items []PublishItem) {
	n := b.n
	bi := b.items[:0]
	for i := range items {
		it := &items[i]
		it.Result = PublishResult{}
		chOpts, err := rules.lookup(it.Channel)
		it.Err = err
		if err != nil {
			continue
		}
		bi = append(bi, broker.PublishItem{Channel: it.Channel, Data: it.Data, Opts: n.brokerPublishOptions(rules, it.Channel, chOpts, it.Options)})
	}
	if len(bi) > 0 {
		if n.direct != nil {
			b.tally(len(bi))
			n.direct.PublishManyTo(&b.handler, bi)
		} else {
			n.broker.PublishMany(bi)
		}
	}
	j := 0
	for i := range items {
		it := &items[i]
		if it.Err != nil {
			continue
		}
		r := &bi[j]
		j++
		if r.Err != nil {
			it.Err = publishError(it.Channel, r.Err)
			continue
		}
		it.Result = PublishResult{StreamPosition: r.Position, Suppressed: r.Suppressed}
	}
	clear(bi) // the scratch must not keep the payloads alive
	b.items = bi[:0]
}

// HandleRuns fans out the burst's own publications; the writers are woken
// when the burst is done.
func (h *burstHandler) HandleRuns(runs []broker.Run) error {
	h.b.n.broadcastRuns(runs, h.b)
	return nil
}
