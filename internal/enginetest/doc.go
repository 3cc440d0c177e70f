// Package enginetest runs a test on every engine a node can run on, so
// that what the engine promises (order, recovery, positioning, presence,
// what crosses nodes) is checked on each rather than on the memory engine
// alone.
//
// A package's TestMain calls Main; a test calls Each:
//
//	func TestMain(m *testing.M) { enginetest.Main(m) }
//
//	enginetest.Each(t, func(t *testing.T, e enginetest.Engine) {
//		n := newNode(t, e.Config(t, cfg))
//		...
//	})
//
// Config gives each node an engine of its own. Nodes of one cluster take
// theirs from Same with one group name; on the memory engine, whose nodes
// cannot share, Same skips the test (Multinode tells beforehand).
//
// The variants, in order:
//
//   - memory: the node's own memory engine; its nodes share nothing.
//   - redis: one redis-server.
//   - redis-sharded: two redis-servers, channels spread between them by
//     the engine's consistent hashing (redis.Config.Addresses).
//   - redis-cluster: a Redis Cluster of three masters
//     (redis.Config.ClusterAddresses).
//   - nats-jetstream: the NATS broker with its history in JetStream, on one
//     nats-server, and presence on the redis variant's server.
//   - redisnats: the NATS broker with history and presence in Redis.
//
// The NATS broker without a store keeps no history, which most of what
// these tests check needs: it has its own tests (broker/nats, and
// tests/cluster for nodes without history).
//
// The servers of a variant start when a test first needs them and serve
// every test of the test binary, each engine under a key prefix of its
// own; Main stops them when the tests end. A test that kills, pauses or
// restarts Redis starts its own servers with redistest instead.
//
// Environment:
//
//   - GYRE_ENGINES: the variants to run, comma-separated (e.g.
//     GYRE_ENGINES=memory,redis); all when unset. An unknown name fails
//     the test.
//   - GYRE_SKIP_REDIS=1: where redis-server is not installed, the variants
//     that need it are skipped rather than failed (see redistest.Require);
//     GYRE_SKIP_NATS=1 the same for nats-server.
package enginetest
