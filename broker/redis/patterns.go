package redis

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/internal/pubconv"
	"github.com/gyrehq/gyre/broker/redis/internal/wirepb"
)

// Pattern delivery. A publication with broker.PublishOptions.PatternScope
// goes, from the publish script, to the scope's pub/sub channel of the
// channel's key base (<base>w.<scope>) besides the channel's own, with the
// same command. A node holding pattern subscriptions in the scope
// subscribes that channel through connections made on first use: one per
// Redis client outside a cluster (every base of a client is the same, and
// a channel's script always runs on the same Redis), one per base in a
// cluster (SSUBSCRIBE in the base's slot, where the channel's script
// SPUBLISHes). Either way a channel's scope messages reach the node over
// one connection, in offset order, and never over the cluster bus, which
// drops messages silently while a restarted node's links are down: a
// connection that breaks is a loss the broker reports.

// scopeName returns the pub/sub channel of a pattern scope under a key
// base.
func scopeName(base, scope string) string { return base + scopeInfix + scope }

// SubscribePatternScope makes this node receive the publications of
// scope: it subscribes the scope's pub/sub channel on every Redis (in a
// cluster, under every base) and returns once each confirmed. A node that calls it again for the same
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
// last one unsubscribes the scope's pub/sub channels.
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
	shards := b.newPatternShards()
	for _, s := range shards {
		b.wg.Add(2)
		go func() { defer b.wg.Done(); s.run() }()
		go func() { defer b.wg.Done(); s.work() }()
	}
	b.patterns.Store(&shards)
	return shards, nil
}

// newPatternShards returns the pattern connections: one per base of the
// cluster, where a channel's scope message is an SPUBLISH in its base's
// slot, else one per Redis client.
func (b *Broker) newPatternShards() []*subShard {
	if b.e.mode == modeCluster {
		shards := make([]*subShard, len(b.e.bases))
		for si, base := range b.e.bases {
			shards[si] = newPatternShard(b, b.e.clients[0], b.where(0, si)+" patterns", base, true)
		}
		return shards
	}
	shards := make([]*subShard, len(b.e.clients))
	for ci, c := range b.e.clients {
		shards[ci] = newPatternShard(b, c, b.where(ci, -1), b.e.bases[0], false)
	}
	return shards
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
			return s.notUp()
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
	pub, err := pubconv.Decode(msg.Publication)
	if err != nil {
		return "", "", rp, fmt.Errorf("%w: decode publication: %w", errUndecodable, err)
	}
	pub.Offset, pub.Trace = msg.Offset, msg.Trace
	rp = broker.RunPublication{Pub: pub, Position: broker.StreamPosition{Offset: msg.Offset, Epoch: msg.Epoch}}
	return scope, msg.Channel, rp, nil
}
