package jetstream

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Messages lost in flight.
//
// JetStream counts a message delivered when it writes it to the
// connection. When the connection goes (nats-server stopped, a network
// cut), the messages written to it and not yet read are lost with it,
// though the durable holds them as delivered to this consumer: they come
// again only after AckWait, and a fetch meanwhile brings newer messages,
// which would then run first. So after a connection was lost, the pump
// compares what the durable has delivered with what it received: if the
// durable delivered past it, newer messages are held back (the queue's
// barrier) until the durable's acknowledgement floor reaches what it had
// delivered: the lost messages came again and ran, and so did those of
// other nodes bound to the durable. Held messages are told in progress,
// so that their own AckWait does not pass meanwhile.
//
// With several nodes on one durable this holds a node back until the
// others have acknowledged the batches they held when its connection
// went, at most holdLimit times AckWait, after which it goes on: order
// across nodes is not kept anyway (see the package documentation).
const holdLimit = 2

// checkInFlight reads the durable's state. With check (the connection
// was lost since the last fetch) it begins holding messages back when the
// durable delivered past what the pump received; while messages are held
// it lets them go once the acknowledgement floor has reached the barrier.
func (c *Consumer) checkInFlight(ctx context.Context, b *binding, q *queue, check bool) error {
	ictx, cancel := context.WithTimeout(ctx, apiTimeout)
	info, err := b.cons.Info(ictx)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("read the durable's state after the connection was lost: %w", err)
	}
	delivered, floor := info.Delivered.Stream, info.AckFloor.Stream
	if check && q.barrier() == 0 && delivered > c.lastSeq && floor < delivered {
		q.hold(delivered)
		c.heldSince = time.Now()
		c.log.Info("consumer: messages delivered while the connection was lost come again after the ack wait; newer ones wait for them to keep the order",
			"stream", c.cfg.StreamName, "durable", c.cfg.DurableConsumerName,
			"received_up_to", c.lastSeq, "delivered_up_to", delivered, "ack_wait", b.ackWait)
		return nil
	}
	until := q.barrier()
	switch {
	case until == 0:
	case floor >= until || delivered < until:
		// delivered < until: the durable was made again, or the stream.
		q.release()
		c.log.Info("consumer: the messages lost in flight ran; going on",
			"stream", c.cfg.StreamName, "durable", c.cfg.DurableConsumerName, "held_for", time.Since(c.heldSince).Round(time.Millisecond))
	case b.ackWait > 0 && time.Since(c.heldSince) > holdLimit*b.ackWait:
		q.release()
		c.log.Warn("consumer: messages before the held ones are still not acknowledged (another node holds them?); going on without them",
			"stream", c.cfg.StreamName, "durable", c.cfg.DurableConsumerName, "ack_floor", floor, "waiting_for", until)
	}
	return nil
}

// streamSeq is m's stream sequence, 0 when its metadata cannot be read
// (never held back then).
func streamSeq(m jetstream.Msg) uint64 {
	md, err := m.Metadata()
	if err != nil {
		return 0
	}
	return md.Sequence.Stream
}

// barrier is the stream sequence past which messages are held, 0 when
// none is.
func (q *queue) barrier() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.until
}

// hold holds back the messages pushed from now on past stream sequence
// until.
func (q *queue) hold(until uint64) {
	q.mu.Lock()
	q.until = until
	q.mu.Unlock()
}

// release queues the held messages, in the order they came, and stops
// holding.
func (q *queue) release() {
	q.mu.Lock()
	q.msgs = append(q.msgs, q.held...)
	clear(q.held)
	q.held, q.until = q.held[:0], 0
	n := len(q.msgs)
	q.mu.Unlock()
	if n > 0 {
		q.signal()
	}
}

// heldInProgress tells JetStream that the held messages are being worked
// on.
func (q *queue) heldInProgress() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, m := range q.held {
		_ = m.InProgress()
	}
}
