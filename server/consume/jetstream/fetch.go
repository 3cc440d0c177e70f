package jetstream

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/gyrehq/gyre/server/consume"
)

// consume runs what b delivers, batch after batch, until ctx ends (nil)
// or a fetch fails. A pump fetches into a queue while the batch loop runs
// what the queue holds: every message that has arrived, up to b.batch,
// makes one batch. JetStream stops delivering at MaxAckPending messages
// not acknowledged, and the queue holds b.batch at most. fetched is set
// once a message has come.
func (c *Consumer) consume(ctx context.Context, nc *nats.Conn, b *binding, fetched *atomic.Bool) error {
	q := newQueue(b.batch)
	pctx, stopPump := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { c.pump(pctx, nc, b, q, fetched) })
	// undone are the messages of the last batch not run, ctx having ended
	// while a command was retried.
	var undone []jetstream.Msg
	defer func() {
		// The pump ends once its fetch has: a pull request the server
		// still held would take in the messages given back below, and
		// lose them until AckWait.
		stopPump()
		q.close()
		wg.Wait()
		// Fetched and not run: given back, in order, for JetStream to
		// deliver them again at once, to another node if there is one.
		for _, m := range undone {
			_ = m.Nak()
		}
		for _, m := range q.msgs {
			_ = m.Nak()
		}
		for _, m := range q.held {
			_ = m.Nak()
		}
		clear(undone)
		clear(q.msgs)
		clear(q.held)
	}()
	for {
		batch, err := q.take(ctx, c.batch[:0])
		c.batch = batch
		if ctx.Err() != nil {
			undone = batch
			return nil
		}
		if err != nil {
			return fmt.Errorf("fetch from durable consumer %q: %w", c.cfg.DurableConsumerName, err)
		}
		if done := c.run(ctx, nc, b, batch, q); done < len(batch) {
			undone = batch[done:]
			return nil
		}
		clear(batch)
	}
}

// pump fetches from b into q until ctx ends or a fetch fails (q.fail).
// Each fetch asks for a batch and ends when the server has delivered it
// or after pullWait; it is never cut short, so that no pull request of
// this consumer outlives it on the server.
//
// After the connection was lost (a reconnection, or a binding again after
// a failed fetch) it looks for messages lost in flight (see checkInFlight)
// before fetching again.
func (c *Consumer) pump(ctx context.Context, nc *nats.Conn, b *binding, q *queue, fetched *atomic.Bool) {
	reconnects := nc.Stats().Reconnects
	check := c.lastSeq > 0
	var told time.Time
	for ctx.Err() == nil {
		if r := nc.Stats().Reconnects; r != reconnects {
			reconnects, check = r, true
		}
		if check || q.barrier() > 0 {
			if err := c.checkInFlight(ctx, b, q, check); err != nil {
				q.fail(err)
				return
			}
			check = false
			if q.barrier() > 0 && time.Since(told) >= b.ackWait/3 {
				q.heldInProgress()
				told = time.Now()
			}
		}
		mb, err := b.cons.Fetch(b.batch, jetstream.FetchMaxWait(pullWait))
		if err != nil {
			q.fail(err)
			return
		}
		for m := range mb.Messages() {
			fetched.Store(true)
			seq := streamSeq(m)
			c.lastSeq = max(c.lastSeq, seq)
			q.push(m, seq)
		}
		if err := mb.Error(); err != nil {
			// The durable deleted, JetStream not answering (503): bound
			// again by the session.
			q.fail(err)
			return
		}
		if nc.IsConnected() {
			c.d.SourceOK()
		}
	}
}

// queue holds the messages fetched and not yet taken into a batch, max
// at most (but for those handed over at shutdown), and those held behind
// a barrier (see checkInFlight).
type queue struct {
	max  int
	mu   sync.Mutex
	room *sync.Cond
	msgs []jetstream.Msg
	// held are the messages past stream sequence until, kept out of the
	// batches until the messages before them have all been acknowledged;
	// until is 0 when nothing is held back.
	held  []jetstream.Msg
	until uint64
	// err is why the pump stopped; closed is set at shutdown.
	err    error
	closed bool
	// ready has a token while msgs or err is set.
	ready chan struct{}
}

func newQueue(max int) *queue {
	q := &queue{max: max, ready: make(chan struct{}, 1)}
	q.room = sync.NewCond(&q.mu)
	return q
}

// push appends m, of stream sequence seq, waiting for room; or holds it
// when it is past the barrier.
func (q *queue) push(m jetstream.Msg, seq uint64) {
	q.mu.Lock()
	if q.until > 0 && seq > q.until {
		// Never more than MaxAckPending: the server delivers no more.
		q.held = append(q.held, m)
		q.mu.Unlock()
		return
	}
	for len(q.msgs) >= q.max && !q.closed {
		q.room.Wait()
	}
	q.msgs = append(q.msgs, m)
	q.mu.Unlock()
	q.signal()
}

// fail records why the pump stopped.
func (q *queue) fail(err error) {
	q.mu.Lock()
	q.err = err
	q.mu.Unlock()
	q.signal()
}

// close lets push append without waiting for room.
func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.room.Broadcast()
}

func (q *queue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// take waits until the queue holds messages and moves them all, in order,
// into batch; or returns the pump's failure once the messages fetched
// before it are taken. It returns nothing when ctx ends first.
func (q *queue) take(ctx context.Context, batch []jetstream.Msg) ([]jetstream.Msg, error) {
	for {
		q.mu.Lock()
		if len(q.msgs) > 0 {
			// At most max: held messages let go join what is queued.
			n := min(len(q.msgs), q.max)
			batch = append(batch, q.msgs[:n]...)
			rest := copy(q.msgs, q.msgs[n:])
			clear(q.msgs[rest:])
			q.msgs = q.msgs[:rest]
			q.mu.Unlock()
			q.room.Broadcast()
			return batch, nil
		}
		err := q.err
		q.mu.Unlock()
		if err != nil {
			return batch, err
		}
		select {
		case <-ctx.Done():
			return batch, nil
		case <-q.ready:
		}
	}
}

// inProgress tells JetStream that the queued and held messages are being
// worked on: they wait for the batch before them.
func (q *queue) inProgress() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, m := range q.msgs {
		_ = m.InProgress()
	}
	for _, m := range q.held {
		_ = m.InProgress()
	}
}

// run dispatches batch and acknowledges the messages done, returning how
// many they are: fewer than the batch only when ctx ended while a command
// was retried. While it waits for such a command, its messages and those
// queued behind it are told in progress, so that AckWait does not hand
// them to another node.
func (c *Consumer) run(ctx context.Context, nc *nats.Conn, b *binding, batch []jetstream.Msg, q *queue) int {
	msgs := c.msgs[:0]
	for _, m := range batch {
		msgs = append(msgs, c.message(m))
	}
	c.msgs = msgs
	stop := keepInProgress(b.ackWait, func() {
		for _, m := range batch {
			_ = m.InProgress()
		}
		q.inProgress()
	})
	done, _ := c.d.Dispatch(ctx, msgs)
	stop()
	c.acknowledge(ctx, nc, batch[:done], msgs[:done])
	// Neither the messages nor their payloads are kept past the batch.
	clear(msgs)
	return done
}

// The bodies of acknowledgements (JetStream's protocol).
var (
	ackAck  = []byte("+ACK")
	ackTerm = []byte("+TERM")
)

// acknowledge acknowledges batch in order, terminating those whose
// message could not be read, and waits until the server has them all. They
// are sent again until it does: an acknowledgement lost with a connection
// (the server restarted) would have its message run again after AckWait,
// after messages that came later; the server ignores one that comes
// twice. While the consumer runs it tries as long as the connection
// lives; at shutdown once more.
func (c *Consumer) acknowledge(ctx context.Context, nc *nats.Conn, batch []jetstream.Msg, msgs []consume.Message) {
	for attempt := 0; ; attempt++ {
		err := sendAcks(nc, batch, msgs)
		if err == nil {
			err = nc.FlushTimeout(flushTimeout)
		}
		if err == nil {
			return
		}
		c.d.SourceFailed("acknowledge", err)
		if nc.IsClosed() || ctx.Err() != nil && attempt > 0 {
			// Given up: the messages come again after AckWait, at least
			// once still holds.
			return
		}
		c.d.Backoff(ctx, attempt)
	}
}

func sendAcks(nc *nats.Conn, batch []jetstream.Msg, msgs []consume.Message) error {
	for i, m := range batch {
		body := ackAck
		if msgs[i].Err != nil {
			body = ackTerm
		}
		if err := nc.Publish(m.Reply(), body); err != nil {
			return err
		}
	}
	return nil
}

// keepInProgress calls tell every third of ackWait until stop is called.
func keepInProgress(ackWait time.Duration, tell func()) (stop func()) {
	if ackWait <= 0 {
		return func() {}
	}
	every := ackWait / 3
	var (
		mu      sync.Mutex
		stopped bool
		t       *time.Timer
	)
	mu.Lock()
	defer mu.Unlock()
	t = time.AfterFunc(every, func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		tell()
		t.Reset(every)
	})
	return func() {
		mu.Lock()
		stopped = true
		t.Stop()
		mu.Unlock()
	}
}
