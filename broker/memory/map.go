package memory

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/gyrehq/gyre/broker"
)

// MapBroker is a broker.MapBroker for one node: map channels' state,
// streams and idempotency results in process memory. Its methods are safe
// for concurrent use. See the package documentation for its rules.
type MapBroker struct {
	cfg      MapConfig
	log      *slog.Logger
	channels shards[mapChannel, *mapChannel]
	// queues holds, per shard of channels, the keys that expire.
	queues  []expiryQueue
	cursors cursorCodec
	handler handlerSlot[broker.RunHandler]
	sweeper
}

var _ broker.MapBroker = (*MapBroker)(nil)

// NewMapBroker returns a MapBroker and starts its background sweep, which
// Close stops.
func NewMapBroker(cfg MapConfig) (*MapBroker, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	b := &MapBroker{
		cfg:     cfg,
		log:     cfg.Logger,
		queues:  make([]expiryQueue, cfg.Shards),
		cursors: newCursorCodec(),
	}
	b.channels = newShards(cfg.Shards, func(channel string, shard int) *mapChannel {
		return &mapChannel{entryBase: entryBase{channel: channel}, queue: &b.queues[shard]}
	})
	b.startSweep(cfg.SweepInterval, b.sweep)
	return b, nil
}

// Run sets the handler that receives the changes of subscribed channels
// from now on. Before Run, changes are made but not delivered. It may be
// called once.
func (b *MapBroker) Run(h broker.RunHandler) error {
	if err := b.checkOpen(); err != nil {
		return err
	}
	return b.handler.set(h)
}

// Subscribe makes the channel's changes reach the handler; a change made
// after Subscribe returns is delivered.
func (b *MapBroker) Subscribe(channel string) error {
	if err := b.checkOpen(); err != nil {
		return err
	}
	c := b.channels.lock(channel, true)
	c.subscribed = true
	c.mu.Unlock()
	return nil
}

// Unsubscribe stops delivery of the channel's changes.
func (b *MapBroker) Unsubscribe(channel string) error {
	if err := b.checkOpen(); err != nil {
		return err
	}
	if c := b.channels.lock(channel, false); c != nil {
		c.subscribed = false
		c.mu.Unlock()
	}
	return nil
}

// Close stops the background sweep and waits for it to end. Later calls
// return nil; other methods then return ErrClosed.
func (b *MapBroker) Close() error {
	b.close()
	return nil
}

// checkCall refuses a call that cannot be served: a closed broker, a
// cancelled context, a mode the broker does not know.
func (b *MapBroker) checkCall(ctx context.Context, mo broker.MapOptions) error {
	if err := b.checkOpen(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	if mo.Mode < broker.MapModeEphemeral || mo.Mode > broker.MapModePersistent {
		return fmt.Errorf("memory: unknown map mode %d", mo.Mode)
	}
	return nil
}

// deliver hands pubs, changes of the locked channel c in offset order, to
// the handler in one run when this node is subscribed to c.
func (b *MapBroker) deliver(c *mapChannel, pubs []broker.RunPublication) {
	h := b.receiver(c)
	if h == nil || len(pubs) == 0 {
		return
	}
	sc := scratchPool.Get().(*scratch)
	b.handOver(h, c, pubs, sc)
	scratchPool.Put(sc)
}

// deliverOne delivers one change of the locked channel c.
func (b *MapBroker) deliverOne(c *mapChannel, rp broker.RunPublication) {
	h := b.receiver(c)
	if h == nil {
		return
	}
	sc := scratchPool.Get().(*scratch)
	sc.pubs = append(sc.pubs[:0], rp)
	b.handOver(h, c, sc.pubs, sc)
	clear(sc.pubs) // the scratch must not keep the publications alive
	sc.pubs = sc.pubs[:0]
	scratchPool.Put(sc)
}

// receiver returns the handler that gets the locked channel c's changes,
// nil when there is none or this node is not subscribed to c.
func (b *MapBroker) receiver(c *mapChannel) broker.RunHandler {
	if !c.subscribed {
		return nil
	}
	return b.handler.get()
}

// handOver calls h with pubs as one run, in runs taken from sc. An error
// from the handler is logged: the changes are made, and a caller
// retrying them would make them twice.
func (b *MapBroker) handOver(h broker.RunHandler, c *mapChannel, pubs []broker.RunPublication, sc *scratch) {
	runs := append(sc.runs[:0], broker.Run{Channel: c.channel, Pubs: pubs})
	if err := h.HandleRuns(runs); err != nil {
		b.log.Error("memory: handle map runs", "channel", c.channel, "changes", len(pubs), "error", err)
	}
	clear(runs)
	sc.runs = runs[:0]
}

// sweep removes the keys expired at now, then frees idle channels within
// the configured budget.
func (b *MapBroker) sweep(now time.Time) {
	var due []*mapEntry
	for i := range b.queues {
		due = b.queues[i].due(now.UnixNano(), due[:0])
		b.expireDue(due, now)
	}
	clear(due)
	b.channels.sweep(now.UnixNano(), b.cfg.SweepBatch)
}
