package memory

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gyrehq/gyre/broker"
)

// Publish writes key and hands the change to the handler, when this node
// is subscribed to the channel, before returning.
func (b *MapBroker) Publish(ctx context.Context, channel, key string, opts broker.MapPublishOptions) (broker.MapUpdateResult, error) {
	if err := b.checkWrite(ctx, key, opts.Map); err != nil {
		return broker.MapUpdateResult{}, err
	}
	switch opts.KeyMode {
	case broker.KeyModeReplace, broker.KeyModeIfNew, broker.KeyModeIfExists:
	default:
		return broker.MapUpdateResult{}, fmt.Errorf("memory: unknown key mode %q", opts.KeyMode)
	}
	now := time.Now()
	nowNano := now.UnixNano()
	c := b.channels.lock(channel, true)
	defer c.mu.Unlock()
	c.touch(nowNano, opts.Map, b.cfg.IdleTTL)
	if res, ok := c.suppress(key, opts, nowNano); ok {
		return res, nil
	}
	rp := c.write(key, opts, now)
	b.remember(c, opts.IdempotencyKey, opts.IdempotentResultTTL, rp.Position, nowNano)
	b.deliverOne(c, rp)
	return broker.MapUpdateResult{Position: rp.Position}, nil
}

// Remove deletes key and hands the change to the handler, when this node
// is subscribed to the channel, before returning.
func (b *MapBroker) Remove(ctx context.Context, channel, key string, opts broker.MapRemoveOptions) (broker.MapUpdateResult, error) {
	if err := b.checkWrite(ctx, key, opts.Map); err != nil {
		return broker.MapUpdateResult{}, err
	}
	now := time.Now()
	nowNano := now.UnixNano()
	c := b.channels.lock(channel, true)
	defer c.mu.Unlock()
	c.touch(nowNano, opts.Map, b.cfg.IdleTTL)
	if res, ok := c.repeated(opts.IdempotencyKey, nowNano); ok {
		return res, nil
	}
	e := c.state[key]
	if e == nil {
		return broker.MapUpdateResult{Position: c.position(), Suppressed: true, SuppressReason: broker.SuppressKeyNotFound}, nil
	}
	rp := c.remove(e, opts.ClientInfo, now)
	b.remember(c, opts.IdempotencyKey, opts.IdempotentResultTTL, rp.Position, nowNano)
	b.deliverOne(c, rp)
	return broker.MapUpdateResult{Position: rp.Position}, nil
}

func (b *MapBroker) checkWrite(ctx context.Context, key string, mo broker.MapOptions) error {
	if err := b.checkCall(ctx, mo); err != nil {
		return err
	}
	if key == "" {
		return errors.New("memory: empty map key")
	}
	return nil
}

// remember keeps the result of a change made with an idempotency key.
func (b *MapBroker) remember(c *mapChannel, key string, ttl time.Duration, sp broker.StreamPosition, now int64) {
	if key != "" {
		c.idemStore(key, sp, now+int64(orDefault(ttl, b.cfg.IdempotentResultTTL)))
	}
}
