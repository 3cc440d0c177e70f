package enginetest

import (
	"testing"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/broker"
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
		open: func(testing.TB, string) (broker.Broker, broker.PresenceManager) { return nil, nil },
	},
	{
		name: "redis", multinode: true, require: redistest.Require,
		open: func(t testing.TB, prefix string) (broker.Broker, broker.PresenceManager) {
			return openRedis(t, redis.Config{Addresses: redisOne.addrs(t), Prefix: prefix})
		},
	},
	{
		name: "redis-sharded", multinode: true, require: redistest.Require,
		open: func(t testing.TB, prefix string) (broker.Broker, broker.PresenceManager) {
			return openRedis(t, redis.Config{Addresses: redisTwo.addrs(t), Prefix: prefix})
		},
	},
	{
		name: "redis-cluster", multinode: true, require: redistest.Require,
		open: func(t testing.TB, prefix string) (broker.Broker, broker.PresenceManager) {
			return openRedis(t, redis.Config{ClusterAddresses: redisCluster.addrs(t), Prefix: prefix})
		},
	},
}

// OnRedis returns cfg with Broker and PresenceManager set to a Redis
// engine on rc, closed when t ends: for a test that kills or restarts a
// redis-server of its own (redistest.Start) and so cannot use the shared
// ones.
func OnRedis(t testing.TB, cfg gyre.Config, rc redis.Config) gyre.Config {
	t.Helper()
	cfg.Broker, cfg.PresenceManager = openRedis(t, rc)
	return cfg
}

// openRedis returns the parts of a Redis engine on cfg.
func openRedis(t testing.TB, cfg redis.Config) (broker.Broker, broker.PresenceManager) {
	t.Helper()
	e, err := redis.New(cfg)
	if err != nil {
		t.Fatalf("enginetest: redis engine: %v", err)
	}
	// The node closes both parts at Shutdown; closing the engine too
	// covers a test that fails before its node runs.
	t.Cleanup(func() { _ = e.Close() })
	return e.Broker(), e.PresenceManager()
}
