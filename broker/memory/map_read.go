package memory

import (
	"context"
	"time"

	"github.com/gyrehq/gyre/broker"
)

// ReadState returns a page of the channel's state in key order, at most
// opts.Limit entries. It gives an unknown channel its epoch.
func (b *MapBroker) ReadState(ctx context.Context, channel string, opts broker.MapStateOptions) (broker.MapStateResult, error) {
	if err := b.checkCall(ctx, opts.Map); err != nil {
		return broker.MapStateResult{}, err
	}
	c := b.channels.lock(channel, true)
	defer c.mu.Unlock()
	c.touch(time.Now().UnixNano(), opts.Map, b.cfg.IdleTTL)
	res := broker.MapStateResult{Position: c.position()}
	if opts.Revision != nil && opts.Revision.Epoch != c.epoch {
		return res, broker.ErrUnrecoverablePosition
	}
	if opts.Key != "" {
		if e := c.state[opts.Key]; e != nil {
			res.Entries = clonePublications([]*broker.Publication{e.pub})
		}
		return res, nil
	}
	after, hasAfter, err := b.cursors.decode(channel, opts.Cursor)
	if err != nil {
		return res, err
	}
	if opts.Limit == 0 {
		return res, nil
	}
	pubs, more := c.page(after, hasAfter, opts.Limit)
	res.Entries = clonePublications(pubs)
	if more {
		res.Cursor = b.cursors.encode(channel, pubs[len(pubs)-1].Key)
	}
	return res, nil
}

// ReadStream returns changes from the channel's stream, read as History
// reads a stream. It gives an unknown channel its epoch.
func (b *MapBroker) ReadStream(ctx context.Context, channel string, opts broker.MapStreamOptions) (broker.MapStreamResult, error) {
	if err := b.checkCall(ctx, opts.Map); err != nil {
		return broker.MapStreamResult{}, err
	}
	now := time.Now().UnixNano()
	c := b.channels.lock(channel, true)
	defer c.mu.Unlock()
	c.touch(now, opts.Map, b.cfg.IdleTTL)
	res := broker.MapStreamResult{Position: c.position()}
	f := opts.Filter
	if since := f.Since; since != nil && (since.Epoch != c.epoch || since.Offset > c.top) {
		return res, broker.ErrUnrecoverablePosition
	}
	if f.Limit == 0 || !opts.Map.Mode.HasStream() || c.hist.len() == 0 {
		return res, nil
	}
	res.Pubs = clonePublications(selectHistory(&c.hist, f, now))
	return res, nil
}

// Stats counts the channel's keys.
func (b *MapBroker) Stats(ctx context.Context, channel string) (broker.MapStats, error) {
	if err := b.checkOpen(); err != nil {
		return broker.MapStats{}, err
	}
	c := b.channels.lock(channel, false)
	if c == nil {
		return broker.MapStats{}, nil
	}
	defer c.mu.Unlock()
	c.expire(time.Now().UnixNano())
	return broker.MapStats{NumKeys: len(c.state)}, nil
}

// Clear drops the channel's state, stream, meta and idempotency results,
// delivering nothing.
func (b *MapBroker) Clear(ctx context.Context, channel string) error {
	if err := b.checkOpen(); err != nil {
		return err
	}
	if c := b.channels.lock(channel, false); c != nil {
		c.reset()
		c.mu.Unlock()
	}
	return nil
}
