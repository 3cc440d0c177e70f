package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

// masterCheckEvery is how often a Sentinel setup checks that its pub/sub
// connections are on the current master.
const masterCheckEvery = 500 * time.Millisecond

// watchMaster follows master changes in a Sentinel setup. After a
// failover the client sends commands to the new master at once, but a
// pub/sub connection stays on the old one until Sentinel reconfigures it
// as a replica, seconds later, or never when it cannot reach it: all that
// time the node gets none of the new master's publications, and its
// subscribers are not told. So every masterCheckEvery the broker asks the
// current master for its replication id and replaces the pub/sub
// connections made on a server with another id; they resubscribe on the
// new master and report their channels lost, as after any interruption.
// (A replica in sync shares its master's id: a connection on the old
// master once it became the new one's replica is left alone, it receives
// what the master publishes.)
func (b *Broker) watchMaster() {
	t := time.NewTicker(masterCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), b.cfg.IOTimeout)
		id, err := replicationID(ctx, b.e.clients[0])
		cancel()
		if err != nil {
			// The connections' own errors and Healthy report an outage.
			continue
		}
		for _, s := range b.subShards() {
			s.followMaster(id)
		}
	}
}

// subShards lists every pub/sub connection of the broker, the pattern
// ones included.
func (b *Broker) subShards() []*subShard {
	var all []*subShard
	for _, row := range b.shards {
		all = append(all, row...)
	}
	if p := b.patterns.Load(); p != nil {
		all = append(all, *p...)
	}
	return all
}

// followMaster replaces the shard's connection when it was made on a
// server whose replication id is not the master's.
func (s *subShard) followMaster(masterID string) {
	s.mu.Lock()
	stale := s.dc != nil && s.replID != "" && s.replID != masterID
	s.mu.Unlock()
	if !stale {
		return
	}
	s.b.log.Info("redis: the master changed; pub/sub moves to the new master", "redis", s.where)
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// serverReplicationID returns the replication id of the server dc is
// connected to, in a Sentinel setup (others do not follow a master), for
// followMaster; it is asked before the connection enters pub/sub mode.
func (s *subShard) serverReplicationID(dc rueidis.DedicatedClient) (string, error) {
	if s.b.e.mode != modeSentinel {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.b.cfg.IOTimeout)
	defer cancel()
	return replicationID(ctx, dc)
}

// replicationID asks a Redis for its replication id (INFO replication,
// master_replid): a replica in sync has its master's, a promoted replica
// gets a new one.
func replicationID(ctx context.Context, c rueidis.CoreClient) (string, error) {
	info, err := c.Do(ctx, c.B().Info().Section("replication").Build()).ToString()
	if err != nil {
		return "", fmt.Errorf("redis: INFO replication: %w", err)
	}
	for line := range strings.Lines(info) {
		if id, ok := strings.CutPrefix(line, "master_replid:"); ok {
			return strings.TrimSpace(id), nil
		}
	}
	return "", errors.New("redis: INFO replication has no master_replid")
}
