// Package cluster holds the multi-node tests of Gyre on the Redis engine:
// real gyre processes (built once per test run) sharing real redis-server
// processes started by broker/redis/redistest, driven by raw WebSocket
// clients and the server HTTP API.
//
// What the tests show:
//
//   - two nodes on one Redis behave as one server: publications, presence,
//     join/leave, info, and the user commands of the API (disconnect,
//     subscribe) reach connections on the other node;
//   - a Redis restart in the middle of a stream of publishes loses nothing:
//     subscribers that may have missed publications are told so (unsubscribe
//     2500), resubscribe and recover from history, and end up with every
//     publication exactly once in offset order;
//   - a node killed with SIGKILL loses nothing either: its clients reconnect
//     to the other node and recover, and its presence entries expire;
//   - the same works over a Redis Cluster, over Sentinel, and over two
//     standalone servers that channels are sharded between (each channel's
//     history is on one of them, and both hold some);
//   - what the API of one node publishes in batches (publishes interleaved
//     over several channels, with other commands and a failing publish
//     between them), in broadcasts to 50 channels, and with idempotency
//     keys repeated in one batch, across batches and through the other
//     node, reaches a client of the other node once per publication, in
//     offset order in each channel; every reply gives its publish's offset
//     in its channel, a repeated key answers the first publish's and
//     publishes nothing, and both nodes show that history, on one Redis,
//     on two sharded ones and on a Redis Cluster;
//   - an SSE session held by one node keeps working when its commands are
//     posted to the emulation endpoint of another node.
//   - three nodes sending event hooks to a backend in the test process
//     (on Redis, and on NATS with presence in Redis) make each channel
//     state and user status transition of the cluster once, signed: a
//     subscriber or user on two nodes leaving one makes no event, one
//     leaving a node and coming back on another within the delay none
//     either; a node killed has its channels vacated and users offline
//     once its lease (the presence TTL) and the delay passed; a backend
//     down for a while gets every event afterwards, in order, under the
//     IDs it refused; and the events a killed node was delivering are
//     delivered by another node, under the same IDs.
//
// The clients in these tests behave like the SDKs: after unsubscribe 2500
// they resubscribe with recover from their last offset and epoch, after a
// lost connection they reconnect and recover.
//
// The tests need redis-server and redis-cli (scripts/install-redis); with
// GYRE_SKIP_REDIS=1 they are skipped when those are missing. Under -race
// the gyre binary is built with the race detector too, and a race it
// reports fails the test. GYRE_BIN=/path/to/gyre runs the tests against a
// binary built elsewhere (another commit, another build mode) instead.
//
// BenchmarkAPIPublish measures the API publish rate of one node on the
// memory engine and on Redis, with Redis CPU per 1,000 publishes; see
// docs/benchmarks.md.
package cluster
