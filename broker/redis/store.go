package redis

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/gyrehq/gyre/broker"
)

// Store is a broker.Store keeping channel streams in Redis for a broker
// whose pub/sub keeps none (NATS): Append is the Broker's publish, the
// same script in the same pipelines, without the pub/sub message. Its
// methods are safe for concurrent use.
//
// The Store shares the Engine's connections and owns none: Close only
// stops it, and the connections stay open for the Engine's other parts
// until Engine.Close (or closing both Broker and PresenceManager)
// releases them. So a NATS broker may close the store it was given while
// the PresenceManager of the same Engine still serves.
type Store struct {
	b      *Broker
	closed atomic.Bool
}

var (
	_ broker.Store         = (*Store)(nil)
	_ broker.HealthChecker = (*Store)(nil)
)

// Append runs the publish script (lua/publish.lua) for each item, as
// PublishMany does: idempotency, version, offset, epoch (with the
// replication id rule), history append and delta base happen atomically
// per item, the items of one Redis in one pipeline, several Redis servers
// at the same time, and per channel in item order. The script sends
// nothing over pub/sub; it stores the publication with the item's Time
// (the current time when zero) and, for an item with Opts.UseDelta,
// returns the delta base it replaces, which Append sets as Prev: the
// channel's previous publication if that one asked for delta too, else
// nil (subscribers got it in full). An idempotent repeat (Suppressed)
// gets no Prev. PatternScope is not looked at: the caller delivers.
func (s *Store) Append(items []broker.StoreItem) {
	calls := make([]publishCall, len(items))
	for i := range items {
		calls[i] = publishCall{item: &items[i].PublishItem, store: &items[i]}
	}
	s.b.runScript(calls, s.checkOpen())
}

// History is Broker.History.
func (s *Store) History(channel string, opts broker.HistoryOptions) ([]*broker.Publication, broker.StreamPosition, error) {
	if err := s.checkOpen(); err != nil {
		return nil, broker.StreamPosition{}, err
	}
	return s.b.history(channel, opts)
}

// RemoveHistory is Broker.RemoveHistory.
func (s *Store) RemoveHistory(channel string) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	return s.b.removeHistory(channel)
}

// Close stops the store: its methods then return ErrClosed. It leaves the
// connections to the Engine (see Store). Later calls return nil.
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}

// Healthy pings every Redis of the Engine (one in a cluster, which
// rueidis routes), so that a broker using the store can report a Redis it
// cannot reach; errors wrap broker.ErrNotAvailable.
func (s *Store) Healthy() error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	e := s.b.e
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.IOTimeout)
	defer cancel()
	var errs []error
	for _, c := range e.clients {
		if err := c.Do(ctx, c.B().Ping().Build()).Error(); err != nil {
			errs = append(errs, wrapErr("ping", err))
		}
	}
	return errors.Join(errs...)
}

func (s *Store) checkOpen() error {
	if s.closed.Load() {
		return ErrClosed
	}
	return nil
}
