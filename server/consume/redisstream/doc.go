// Package redisstream consumes server API commands from Redis streams, as
// a member of a consumer group (the redis_stream consumer). It needs Redis
// 6.2 or later (XAUTOCLAIM); the lag needs Redis 7.
//
// # Entries
//
// An entry's field payload_value ("payload") holds the payload. With the
// field method_value ("method") present, the payload is the request of
// that method ("batch" runs each command of a batch in order); without
// it, the payload is {"method": ..., "payload": {...}}. In publication
// data mode the payload is published as it is into the channels of the
// field channels_value (a broadcast when several), with the idempotency
// key, delta, version, version epoch and tags (fields starting with
// tags_value_prefix) of their fields. An entry that cannot be read (no
// payload field, a version that is not a number, no channels) is logged
// with its position ("stream <key> entry <id>"), counted as skipped and
// acknowledged.
//
// # Reading
//
// A reader takes up to readCount entries at a time (XREADGROUP ... COUNT
// BLOCK), hands them to the dispatcher as one batch and acknowledges
// (XACK) exactly those done: an entry whose command failed for a reason
// that may pass (the broker down) is run again and the entries after it
// wait.
//
// Before new entries a reader runs, in ID order, those it was given but
// did not acknowledge (XREADGROUP from ID 0: after a failure that may have
// lost a reply carrying entries), then those other consumers of the group
// left unacknowledged for visibility_timeout (XAUTOCLAIM: their node
// died), which it looks for at start and then every visibility_timeout
// (at most every reclaimEvery). While a batch runs longer than a quarter
// of visibility_timeout (retries while the broker is down), the reader
// renews its claim on the batch's entries, so that other consumers do not
// take them while it is alive: an entry runs on a second consumer only
// when the first could not reach Redis for visibility_timeout.
//
// # Order and several nodes
//
// With num_workers 1 (the default) a stream is read by one reader of the
// whole group at a time, so that it runs in stream order however many
// nodes consume it. The readers of the nodes compete for a lease per
// stream, a key in the stream's Redis:
//
//	<prefix>.lease.<consumer_group>.<stream>   string: the holder's consumer name,
//	                                           expiring after visibility_timeout
//
// (prefix is the consumer's redis prefix, "gyre"). The holder renews it
// every quarter of visibility_timeout, also while a batch is retried; the
// others try to take it every second (or quarter of visibility_timeout). A
// stopping node gives it up, and another takes the stream over within a
// second; when a node dies, another takes it over once the lease
// expires. A reader that takes the lease first
// claims every entry pending with other consumers of the group, however
// long idle (XAUTOCLAIM from idle 0: their holder is gone), and runs them
// before new ones. Streams are not balanced between nodes: each goes to
// whichever reader takes its lease first; give a group several streams
// to spread the work.
//
// With num_workers above 1, each node runs that many readers per stream
// and every reader takes entries as the group hands them out, as
// Centrifugo does: the work spreads over readers and nodes, each entry
// runs once, but two entries of a stream may run at the same time, and
// their order is not kept. All nodes of a group must use the same
// num_workers.
//
// # The group
//
// The group is made when missing (XGROUP CREATE ... $ MKSTREAM): a new
// group starts at the end of the stream, as Centrifugo's does; a producer
// that wants no entry missed makes it first (XGROUP CREATE <stream>
// <group> 0 MKSTREAM). If it goes missing while the consumer runs (Redis
// restarted without persistence, the key deleted), it is made again after
// the last entry known to have been delivered to the group, so that
// entries added since run.
//
// # Several Redis servers
//
// With several addresses (and no cluster or Sentinel), every stream is
// read on every one of them, each with its own group and lease: a
// producer may write a stream on any of them, and order holds per stream
// and server. In a Redis Cluster a stream lives on the node of its key's
// slot.
//
// # Consumer names
//
// A node's consumers in the group are named <host>-<random>-<worker>,
// fixed for the life of the consumer and new at each start. At shutdown
// each reader finishes its batch, acknowledges it, gives its lease up
// and, holding no entry any more, leaves the group (XGROUP DELCONSUMER).
// A node that dies leaves its name in the group; its entries are claimed
// by the others.
//
// # Lag
//
// Every lagEvery the consumer adds, over its streams, the group's lag
// (entries not delivered yet, XINFO GROUPS, Redis 7) and pending entries
// (delivered, not acknowledged). When Redis cannot tell a group's lag
// (Redis 6, or entries deleted from the middle of the stream) the lag is
// reported unknown (-1).
package redisstream
