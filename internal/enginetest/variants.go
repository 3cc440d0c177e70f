package enginetest

import (
	"testing"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/broker"
	"github.com/gyrehq/gyre/broker/memory"
	"github.com/gyrehq/gyre/broker/nats"
	"github.com/gyrehq/gyre/broker/nats/jetstream"
	"github.com/gyrehq/gyre/broker/nats/natstest"
	"github.com/gyrehq/gyre/broker/redis"
	"github.com/gyrehq/gyre/broker/redis/redistest"
)

// variants are run by Each in this order. Adding one is adding an entry:
// name (GYRE_ENGINES, the subtest's name), multinode when engines opened
// under one prefix share channels, history and presence between nodes,
// require to skip or fail where its servers are not installed, and open
// to make the parts of one engine under a prefix. open reaches servers
// that the test binary shares through a servers value (servers.go):
// redisOne and the others, or one added for servers of a new kind.
var variants = []variant{
	{
		name: "memory",
		// The memory MapBroker is made by the variant: a node without one
		// serves no map channels.
		open: func(t testing.TB, _ string) parts {
			return parts{maps: openMemoryMaps(t), occupancy: openMemoryOccupancy}
		},
	},
	{
		name: "redis", multinode: true, require: redistest.Require,
		open: func(t testing.TB, prefix string) parts {
			return openRedis(t, redis.Config{Addresses: redisOne.addrs(t), Prefix: prefix})
		},
	},
	{
		name: "redis-sharded", multinode: true, require: redistest.Require,
		open: func(t testing.TB, prefix string) parts {
			return openRedis(t, redis.Config{Addresses: redisTwo.addrs(t), Prefix: prefix})
		},
	},
	{
		name: "redis-cluster", multinode: true, require: redistest.Require,
		open: func(t testing.TB, prefix string) parts {
			return openRedis(t, redis.Config{ClusterAddresses: redisCluster.addrs(t), Prefix: prefix})
		},
	},
	{
		name: "nats-jetstream", multinode: true, require: requireNATS,
		open: func(t testing.TB, prefix string) parts {
			url := natsOne.addrs(t)[0]
			st, err := jetstream.New(jetstream.Config{URL: url, Prefix: prefix})
			if err != nil {
				t.Fatalf("enginetest: jetstream store: %v", err)
			}
			p := openRedis(t, redis.Config{Addresses: redisOne.addrs(t), Prefix: prefix})
			p.broker = openNATS(t, nats.Config{URL: url, Prefix: prefix, Store: st})
			return p
		},
	},
	{
		name: "redisnats", multinode: true, require: requireNATS,
		open: func(t testing.TB, prefix string) parts {
			e := newRedis(t, redis.Config{Addresses: redisOne.addrs(t), Prefix: prefix})
			return parts{
				broker:    openNATS(t, nats.Config{URL: natsOne.addrs(t)[0], Prefix: prefix, Store: e.Store()}),
				presence:  e.PresenceManager(),
				maps:      e.MapBroker(),
				occupancy: redisOccupancy(e),
			}
		},
	},
}

// requireNATS needs nats-server for the broker and redis-server for
// presence (and, on redisnats, history).
func requireNATS(t testing.TB) {
	t.Helper()
	natstest.Require(t)
	redistest.Require(t)
}

// openNATS returns a NATS broker on cfg, closed when t ends.
func openNATS(t testing.TB, cfg nats.Config) broker.Broker {
	t.Helper()
	b, err := nats.New(cfg)
	if err != nil {
		t.Fatalf("enginetest: nats broker: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// OnRedis returns cfg with Broker, PresenceManager and MapBroker set to a
// Redis engine on rc, closed when t ends: for a test that kills or
// restarts a redis-server of its own (redistest.Start) and so cannot use
// the shared ones.
func OnRedis(t testing.TB, cfg gyre.Config, rc redis.Config) gyre.Config {
	t.Helper()
	return openRedis(t, rc).set(t, cfg)
}

// openRedis returns the parts of a Redis engine on cfg.
func openRedis(t testing.TB, cfg redis.Config) parts {
	t.Helper()
	e := newRedis(t, cfg)
	return parts{broker: e.Broker(), presence: e.PresenceManager(), maps: e.MapBroker(), occupancy: redisOccupancy(e)}
}

// redisOccupancy makes occupancy trackers on e, closed when t ends (the
// node closes its own at Shutdown; this covers a test that fails first).
func redisOccupancy(e *redis.Engine) func(t testing.TB) broker.OccupancyTracker {
	return func(t testing.TB) broker.OccupancyTracker {
		tr := redis.NewOccupancyTracker(e)
		t.Cleanup(func() { _ = tr.Close() })
		return tr
	}
}

// openMemoryOccupancy returns a memory occupancy tracker, closed when t
// ends.
func openMemoryOccupancy(t testing.TB) broker.OccupancyTracker {
	tr, err := memory.NewOccupancyTracker(memory.OccupancyConfig{})
	if err != nil {
		t.Fatalf("enginetest: memory occupancy tracker: %v", err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// newRedis returns a Redis engine on cfg, closed when t ends.
func newRedis(t testing.TB, cfg redis.Config) *redis.Engine {
	t.Helper()
	e, err := redis.New(cfg)
	if err != nil {
		t.Fatalf("enginetest: redis engine: %v", err)
	}
	// The node closes what it is given at Shutdown; closing the engine
	// too covers a test that fails before its node runs.
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// openMemoryMaps returns a memory MapBroker, closed when t ends.
func openMemoryMaps(t testing.TB) broker.MapBroker {
	t.Helper()
	mb, err := memory.NewMapBroker(memory.MapConfig{})
	if err != nil {
		t.Fatalf("enginetest: memory map broker: %v", err)
	}
	// The node closes it at Shutdown; closing it here too covers a test
	// that fails before its node runs.
	t.Cleanup(func() { _ = mb.Close() })
	return mb
}
