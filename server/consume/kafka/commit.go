package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gyrehq/gyre/server/consume"
)

// committer commits the offsets of what the partitions ran: at most one
// commit at a time, every commitInterval, and at once when partitions are
// revoked or the consumer stops.
type committer struct {
	cl   *kgo.Client
	d    *consume.Dispatcher
	wake chan struct{}

	// flushMu is held through a commit, so that a flush returns only once
	// the offsets marked before it are committed, even by another flush
	// (a revoked partition's next owner must find them).
	flushMu sync.Mutex

	mu      sync.Mutex
	pending map[string]map[int32]kgo.EpochOffset
}

// mark records that the partition ran everything before eo.Offset.
func (c *committer) mark(topic string, id int32, eo kgo.EpochOffset) {
	c.mu.Lock()
	if c.pending == nil {
		c.pending = make(map[string]map[int32]kgo.EpochOffset)
	}
	t := c.pending[topic]
	if t == nil {
		t = make(map[int32]kgo.EpochOffset)
		c.pending[topic] = t
	}
	t[id] = eo
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// forget drops what is marked for tps: partitions this member no longer
// owns.
func (c *committer) forget(tps map[string][]int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for topic, ids := range tps {
		for _, id := range ids {
			delete(c.pending[topic], id)
		}
		if len(c.pending[topic]) == 0 {
			delete(c.pending, topic)
		}
	}
}

// loop commits what is marked until ctx ends, every commitInterval at
// most; a failed commit is tried again after a back-off.
func (c *committer) loop(ctx context.Context) {
	attempt := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		}
		cctx, cancel := context.WithTimeout(ctx, commitTimeout)
		err := c.flush(cctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		wait := commitInterval
		if err != nil {
			c.d.SourceFailed("commit offsets", err)
			if !c.d.Backoff(ctx, attempt) {
				return
			}
			attempt++
			wait = 0
			select {
			case c.wake <- struct{}{}:
			default:
			}
		} else {
			attempt = 0
		}
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}
}

// flush commits what is marked. Offsets whose commit failed are marked
// again, unless newer ones were marked meanwhile.
func (c *committer) flush(ctx context.Context) error {
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	c.mu.Lock()
	offsets := c.pending
	c.pending = nil
	c.mu.Unlock()
	if len(offsets) == 0 {
		return nil
	}
	var failed error
	c.cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			failed = err
			return
		}
		ok := make(map[string]map[int32]bool)
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					failed = errors.Join(failed, fmt.Errorf("topic %s partition %d: %w", t.Topic, p.Partition, err))
					continue
				}
				if ok[t.Topic] == nil {
					ok[t.Topic] = make(map[int32]bool)
				}
				ok[t.Topic][p.Partition] = true
			}
		}
		for topic, ps := range offsets {
			for id := range ps {
				if ok[topic][id] {
					delete(ps, id)
				}
			}
		}
	})
	if failed == nil {
		return nil
	}
	// What is left of offsets failed: mark it again where nothing newer
	// was marked.
	c.mu.Lock()
	for topic, ps := range offsets {
		for id, eo := range ps {
			if _, newer := c.pending[topic][id]; newer {
				continue
			}
			if c.pending == nil {
				c.pending = make(map[string]map[int32]kgo.EpochOffset)
			}
			if c.pending[topic] == nil {
				c.pending[topic] = make(map[int32]kgo.EpochOffset)
			}
			c.pending[topic][id] = eo
		}
	}
	c.mu.Unlock()
	return failed
}
