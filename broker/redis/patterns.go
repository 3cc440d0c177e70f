package redis

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/redis/internal/wirepb"
)

// Pattern delivery. A publication with broker.PublishOptions.PatternScope
// goes, from the publish script, to the scope's classic pub/sub channel
// (<prefix>.w.<scope>) besides the channel's own. A node holding pattern
// subscriptions in the scope subscribes that channel on every Redis
// client, through one connection per client made on first use: a
// channel's script always runs on the same Redis, so its publications
// reach the node over one connection, in offset order. In a cluster one
// connection to any node suffices: a classic PUBLISH reaches every node
// over the cluster bus.

// scopeName returns the pub/sub channel of a pattern scope.
func (b *Broker) scopeName(scope string) string { return b.scopePrefix + scope }

// SubscribePatternScope makes this node receive the publications of
// scope: it subscribes the scope's pub/sub channel on every Redis and
// returns once each confirmed. A node that calls it again for the same
// scope must call UnsubscribePatternScope as many times. While a Redis is
// unreachable it fails with an error wrapping broker.ErrNotAvailable.
// Their publications reach the EventHandler in runs with Run.Scope set.
//
// Pattern scopes are not recoverable: publications sent while a pattern
// connection was down are lost. Once the broker has subscribed the scopes
// again it reports them to an EventHandler that implements
// broker.PatternScopeLostHandler, in order with their publications, and
// logs at warn level when the handler does not.
func (b *Broker) SubscribePatternScope(scope string) error {
	if err := b.checkRunning(); err != nil {
		return err
	}
	if scope == "" {
		return errors.New("redis: empty pattern scope")
	}
	b.patMu.Lock()
	defer b.patMu.Unlock()
	if n := b.scopeRefs[scope]; n > 0 {
		b.scopeRefs[scope] = n + 1
		return nil
	}
	shards, err := b.patternShards()
	if err != nil {
		return err
	}
	if err := b.waitPatternShards(shards); err != nil {
		return err
	}
	for i, s := range shards {
		if err := s.add(scope); err != nil {
			for _, done := range shards[:i] {
				if err := done.remove(scope); err != nil {
					b.logRepeated("undo scope", done.where, slog.LevelWarn, "redis: undo pattern scope subscription", "error", err)
				}
			}
			return err
		}
	}
	b.scopeRefs[scope] = 1
	return nil
}

// UnsubscribePatternScope undoes one SubscribePatternScope of scope; the
// last one unsubscribes the scope's pub/sub channel on every Redis.
// Unsubscribing a scope not subscribed does nothing.
func (b *Broker) UnsubscribePatternScope(scope string) error {
	if err := b.checkRunning(); err != nil {
		return err
	}
	b.patMu.Lock()
	defer b.patMu.Unlock()
	switch n := b.scopeRefs[scope]; n {
	case 0:
		return nil
	case 1:
		delete(b.scopeRefs, scope)
	default:
		b.scopeRefs[scope] = n - 1
		return nil
	}
	p := b.patterns.Load()
	if p == nil {
		return nil
	}
	var errs []error
	for _, s := range *p {
		if err := s.remove(scope); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// patternShards returns the pattern connections, starting them on the
// first call.
func (b *Broker) patternShards() ([]*subShard, error) {
	if p := b.patterns.Load(); p != nil {
		return *p, nil
	}
	b.startMu.Lock()
	defer b.startMu.Unlock()
	if b.closed.Load() {
		return nil, ErrClosed
	}
	if p := b.patterns.Load(); p != nil {
		return *p, nil
	}
	shards := make([]*subShard, len(b.e.clients))
	for ci, c := range b.e.clients {
		s := newPatternShard(b, c, b.where(ci, -1))
		shards[ci] = s
		b.wg.Add(2)
		go func() { defer b.wg.Done(); s.run() }()
		go func() { defer b.wg.Done(); s.work() }()
	}
	b.patterns.Store(&shards)
	return shards, nil
}

// waitPatternShards waits until every pattern connection came up once,
// as Run does for the others.
func (b *Broker) waitPatternShards(shards []*subShard) error {
	deadline := time.NewTimer(b.cfg.ConnectTimeout + b.cfg.IOTimeout)
	defer deadline.Stop()
	for _, s := range shards {
		select {
		case <-s.ready:
		case <-b.stop:
			return ErrClosed
		case <-deadline.C:
			return fmt.Errorf("redis: pub/sub to %s did not come up: %w", s.where, broker.ErrNotAvailable)
		}
	}
	return nil
}

// patternPublication decodes a publication received on a scope's pub/sub
// channel and returns the scope and the channel it was published to.
func (s *subShard) patternPublication(name string, msg *wirepb.Message) (scope, channel string, rp broker.RunPublication, err error) {
	scope, ok := strings.CutPrefix(name, s.prefix)
	if !ok {
		return "", "", rp, errors.New("redis: message on unknown pub/sub channel")
	}
	if msg.Type != wirepb.Message_PUBLICATION || msg.Channel == "" {
		return "", "", rp, fmt.Errorf("%w: message of type %d for channel %q on a pattern scope", errUndecodable, msg.Type, msg.Channel)
	}
	pub, err := decodePublication(msg.Publication)
	if err != nil {
		return "", "", rp, fmt.Errorf("%w: decode publication: %w", errUndecodable, err)
	}
	pub.Offset = msg.Offset
	rp = broker.RunPublication{Pub: pub, Position: broker.StreamPosition{Offset: msg.Offset, Epoch: msg.Epoch}}
	return scope, msg.Channel, rp, nil
}
