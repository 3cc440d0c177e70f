package gyre_test

import (
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/gyrehq/gyre"
	"github.com/gyrehq/gyre/broker/redis"
	"github.com/gyrehq/gyre/broker/redis/redistest"
)

// testBroker is a broker an engine test runs on.
type testBroker struct {
	name  string
	redis *redistest.Server // nil for the memory engine
}

// brokers runs fn once per broker the engine runs on: the memory engine
// and Redis, a real redis-server started for the test. What the engine
// promises about order, recovery and positioning must hold on each, so
// the tests of those run here rather than on the memory engine alone.
func brokers(t *testing.T, fn func(t *testing.T, b testBroker)) {
	t.Helper()
	t.Run("memory", func(t *testing.T) { fn(t, testBroker{name: "memory"}) })
	t.Run("redis", func(t *testing.T) {
		fn(t, testBroker{name: "redis", redis: redistest.Start(t)})
	})
}

// redisPrefixes numbers the key prefixes of the Redis engines of a test
// run, so that nodes sharing a redis-server never share streams.
var redisPrefixes atomic.Int64

// config returns cfg set to run on b. Each call on Redis makes an engine
// of its own, with its own key prefix: two nodes of one test see each
// other's channels only through sameRedis.
func (b testBroker) config(t testing.TB, cfg gyre.Config) gyre.Config {
	t.Helper()
	if b.redis == nil {
		return cfg
	}
	return b.sameRedis(t, cfg, "t"+strconv.FormatInt(redisPrefixes.Add(1), 10))
}

// sameRedis is config with the given key prefix: nodes made with one
// prefix share channels, history and presence, as nodes of one cluster do.
func (b testBroker) sameRedis(t testing.TB, cfg gyre.Config, prefix string) gyre.Config {
	t.Helper()
	e, err := redis.New(redis.Config{Addresses: []string{b.redis.Addr}, Prefix: prefix})
	if err != nil {
		t.Fatalf("redis engine: %v", err)
	}
	// The node closes both parts at Shutdown; closing the engine too
	// covers a test that fails before the node runs.
	t.Cleanup(func() { _ = e.Close() })
	cfg.Broker, cfg.PresenceManager = e.Broker(), e.PresenceManager()
	return cfg
}
