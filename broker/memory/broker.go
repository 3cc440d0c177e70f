package memory

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/gyrehq/gyre/broker"
)

// ErrClosed is returned by every method of a closed Broker or
// PresenceManager except Close.
var ErrClosed = errors.New("memory: closed")

// Broker is a broker.Broker for one node. Its methods are safe for
// concurrent use.
type Broker struct {
	cfg     Config
	log     *slog.Logger
	streams shards[stream, *stream]
	handler handlerSlot[broker.EventHandler]
	sweeper
}

var (
	_ broker.Broker          = (*Broker)(nil)
	_ broker.DirectPublisher = (*Broker)(nil)
	_ broker.PatternBroker   = (*Broker)(nil)
)

// NewBroker returns a Broker and starts its background sweep, which Close
// stops.
func NewBroker(cfg Config) (*Broker, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	b := &Broker{
		cfg:     cfg,
		log:     cfg.Logger,
		streams: newShards(cfg.Shards, newStream),
	}
	b.startSweep(cfg.SweepInterval, func(now time.Time) { b.sweep(now.UnixNano()) })
	return b, nil
}

// Run sets the handler that receives every publication, join, leave and
// control message from now on. Before Run, publishes are stored but not
// delivered. It may be called once.
func (b *Broker) Run(h broker.EventHandler) error {
	if err := b.checkOpen(); err != nil {
		return err
	}
	return b.handler.set(h)
}

func (b *Broker) eventHandler() broker.EventHandler { return b.handler.get() }

// Subscribe does nothing: one node receives every channel's events.
func (b *Broker) Subscribe(channel string) error { return b.checkOpen() }

// Unsubscribe does nothing, like Subscribe.
func (b *Broker) Unsubscribe(channel string) error { return b.checkOpen() }

// SubscribePatternScope does nothing: one node receives the publications
// of every scope, as broker.PatternBroker allows.
func (b *Broker) SubscribePatternScope(scope string) error { return b.checkOpen() }

// UnsubscribePatternScope does nothing, like SubscribePatternScope:
// publications of the scope keep reaching the handler.
func (b *Broker) UnsubscribePatternScope(scope string) error { return b.checkOpen() }

// PublishJoin hands a join event to the handler.
func (b *Broker) PublishJoin(channel string, info *broker.ClientInfo) error {
	if err := b.checkOpen(); err != nil {
		return err
	}
	if h := b.eventHandler(); h != nil {
		if err := h.HandleJoin(channel, info); err != nil {
			return fmt.Errorf("memory: handle join: %w", err)
		}
	}
	return nil
}

// PublishLeave hands a leave event to the handler.
func (b *Broker) PublishLeave(channel string, info *broker.ClientInfo) error {
	if err := b.checkOpen(); err != nil {
		return err
	}
	if h := b.eventHandler(); h != nil {
		if err := h.HandleLeave(channel, info); err != nil {
			return fmt.Errorf("memory: handle leave: %w", err)
		}
	}
	return nil
}

// PublishControl hands data to the handler. With one node every control
// message is for this node, whatever nodeID says.
func (b *Broker) PublishControl(data []byte, nodeID string) error {
	if err := b.checkOpen(); err != nil {
		return err
	}
	if h := b.eventHandler(); h != nil {
		if err := h.HandleControl(data); err != nil {
			return fmt.Errorf("memory: handle control: %w", err)
		}
	}
	return nil
}

// Close stops the background sweep and waits for it to end. Later calls
// return nil; other methods then return ErrClosed.
func (b *Broker) Close() error {
	b.close()
	return nil
}

// sweep runs one tick over every shard within the configured budget.
func (b *Broker) sweep(now int64) {
	b.streams.sweep(now, b.cfg.SweepBatch)
}
