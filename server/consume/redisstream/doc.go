// Package redisstream consumes server API commands from Redis streams, as
// a member of a consumer group (the redis_stream consumer).
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
// with its position, counted as skipped and acknowledged.
//
// # Reading
//
// Each stream gets num_workers readers on each node. A reader takes up
// to readCount entries at a time (XREADGROUP ... COUNT BLOCK), hands them
// to the dispatcher as one batch and acknowledges (XACK) exactly those
// done: an entry whose command failed for a reason that may pass (the
// broker down) is run again and the entries after it wait, so that a
// stream read by one reader keeps its order.
//
// Before new entries a reader runs, in ID order, those it was given but
// did not acknowledge (XREADGROUP from ID 0: after a failure that may have
// lost a reply carrying entries), then those that other consumers of the
// group left unacknowledged for visibility_timeout (XAUTOCLAIM: their node
// died). It looks for the latter at start and every visibility_timeout
// (at most every reclaimEvery). While a batch runs longer than a third of
// visibility_timeout (retries while the broker is down), the reader
// renews its claim on the entries, so that other consumers do not take
// them while it is alive; an entry is thus run by a second consumer only
// when the first could not reach Redis for visibility_timeout.
//
// The group is made when missing (XGROUP CREATE ... $ MKSTREAM): a new
// group starts at the end of the stream, as Centrifugo's does. If it goes
// missing while the consumer runs (Redis restarted without persistence,
// the key deleted), it is made again after the last entry known to have
// been delivered to the group, so that entries added since are not
// skipped.
//
// # Order across nodes
//
// A group hands each entry to one consumer, whichever asks first: with
// several nodes (or num_workers above 1) every entry runs once, but two
// entries of one stream may run at the same time on two nodes, so their
// order is not kept. Order holds for a stream read by one reader in all:
// one node with num_workers 1. Entries reclaimed from a dead consumer run
// after entries the group delivered later.
//
// # Several Redis servers
//
// With several addresses (and no cluster or Sentinel), every stream is
// read on every one of them, each with its own group: a producer may
// write a stream on any of them, and order holds per stream and server.
// In a Redis Cluster a stream lives on the node of its key's slot.
//
// # Consumer names
//
// A node's consumers in the group are named <host>-<random>-<worker>,
// fixed for the life of the consumer and new at each start. At shutdown
// each reader finishes its batch, acknowledges it and, holding no entry
// any more, leaves the group (XGROUP DELCONSUMER). A node that dies
// leaves its name in the group; its entries are reclaimed by the others.
//
// # Lag
//
// Every lagEvery the consumer adds, over its streams, the group's lag
// (entries not delivered yet, XINFO GROUPS, Redis 7) and pending entries
// (delivered, not acknowledged). When Redis cannot tell a group's lag
// (Redis 6, or entries deleted from the middle of the stream) the lag is
// reported unknown (-1).
package redisstream
