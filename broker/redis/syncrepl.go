package redis

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/gyrehq/gyre/broker"
	"github.com/redis/rueidis"
)

// Synchronous replication (Config.SyncReplicas). Redis replicates
// asynchronously: a master acknowledges a write before any replica has
// it, so a failover can lose the last acknowledged publications. WAIT
// blocks until the writes sent before it on the same connection reached
// that many replicas, or a timeout passes, and answers how many did. So
// each pipeline of publish calls goes on a connection of its own
// (rueidis's dedicated connections, pooled) followed by one WAIT; in a
// cluster, one pipeline per shard's slot, since WAIT speaks for the
// master the connection is on. A publication that Redis ran but fewer
// replicas than asked acknowledged in time gets an error wrapping
// broker.ErrNotAvailable: it was delivered and is in the master's
// history, but may not survive a failover, and the publisher must not
// take it as safe. (WAIT does not make Redis strongly consistent: a
// failover may still pick a replica that lacks a write others have; it
// bounds what an acknowledged publication can lose to the case where
// every replica that had it fails at once.)

// runCallsSynced runs the calls of client ci, grouped by key base, each
// group as one pipeline ending with WAIT.
func (b *Broker) runCallsSynced(ctx context.Context, ci int, sent []*publishCall) {
	groups := make(map[string][]*publishCall)
	var order []string
	for _, c := range sent {
		if _, ok := groups[c.base]; !ok {
			order = append(order, c.base)
		}
		groups[c.base] = append(groups[c.base], c)
	}
	if len(order) == 1 {
		b.runPipeline(ctx, ci, sent, b.waitingDo(ci))
		return
	}
	// Bases are disjoint sets of channels: their order does not matter.
	var wg sync.WaitGroup
	for _, base := range order {
		wg.Go(func() { b.runPipeline(ctx, ci, groups[base], b.waitingDo(ci)) })
	}
	wg.Wait()
}

// waitingDo returns a pipeline runner that sends the commands on a
// dedicated connection followed by WAIT, and turns the results of the
// commands that ran into errors when too few replicas acknowledged them.
func (b *Broker) waitingDo(ci int) func(context.Context, ...rueidis.Completed) []rueidis.RedisResult {
	client := b.e.clients[ci]
	where := b.redisName(ci)
	want := int64(b.cfg.SyncReplicas)
	timeout := b.cfg.SyncReplicasTimeout.Milliseconds()
	return func(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
		var results []rueidis.RedisResult
		err := b.withSyncSlot(ctx, func() error {
			return client.Dedicated(func(dc rueidis.DedicatedClient) error {
				wait := dc.B().Wait().Numreplicas(want).Timeout(timeout).Build()
				results = dc.DoMulti(ctx, slices.Concat(cmds, rueidis.Commands{wait})...)
				return nil
			})
		})
		if err == nil && len(results) != len(cmds)+1 {
			err = fmt.Errorf("%d replies to %d commands", len(results), len(cmds)+1)
		}
		if err != nil {
			results = make([]rueidis.RedisResult, len(cmds))
			for i := range results {
				results[i] = rueidis.NewErrorResult(fmt.Errorf("redis: dedicated connection: %w", err))
			}
			return results
		}
		got, err := results[len(cmds)].AsInt64()
		results = results[:len(cmds)]
		if err == nil && got >= want {
			return results
		}
		waitErr := b.replicationShortfall(where, got, want, err)
		for i, r := range results {
			if r.Error() == nil {
				results[i] = rueidis.NewErrorResult(waitErr)
			}
		}
		return results
	}
}

// replicationShortfall is the error of publications that fewer replicas
// than asked acknowledged on the Redis named where, logged through the
// broker's failure log (a few lines a second and a count).
func (b *Broker) replicationShortfall(where string, got, want int64, err error) error {
	if err != nil {
		err = fmt.Errorf("redis: publish: WAIT for %d replicas: %w: %w", want, broker.ErrNotAvailable, err)
	} else {
		err = fmt.Errorf("redis: publish: %d of %d replicas acknowledged the publication in time; it may be lost in a failover: %w",
			got, want, broker.ErrNotAvailable)
	}
	b.logRepeated("replicas", where, slog.LevelWarn, "redis: publications not acknowledged by enough replicas", "error", err)
	return err
}

// syncConcurrency bounds the pipelines waiting for replicas at once, per
// broker: each holds a connection (with its buffers, about a megabyte)
// while it waits. More wait for a turn, within their context.
const syncConcurrency = 16

// withSyncSlot runs fn holding one of the syncConcurrency turns.
func (b *Broker) withSyncSlot(ctx context.Context, fn func() error) error {
	select {
	case b.syncSlots <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("waiting for a turn to publish with synchronous replication: %w", ctx.Err())
	}
	defer func() { <-b.syncSlots }()
	return fn()
}
