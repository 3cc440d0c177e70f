// Package redis implements the broker contracts (broker.Broker,
// broker.PresenceManager, broker.Store and broker.MapBroker) on Redis, so
// that many Gyre nodes share publications, history, presence and map
// channels. It talks to Redis through
// github.com/redis/rueidis (RESP3, automatic pipelining) and works with
// standalone servers, several standalone servers sharded by channel, a
// Redis Cluster, or a master watched by Sentinels.
//
//	e, err := redis.New(redis.Config{Addresses: []string{"127.0.0.1:6379"}})
//	...
//	node, err := gyre.NewNode(gyre.Config{Broker: e.Broker(), PresenceManager: e.PresenceManager()})
//	defer e.Close()
//
// New takes a plain Config; the server turns its engine.redis keys into
// one. Everything stored in Redis or sent between nodes is protobuf: the
// client protocol's Publication and ClientInfo, wrapped for pub/sub in the
// small Message of internal/wirepb.
//
// # Keys and channels
//
// Every name starts with Config.Prefix ("gyre") and a dot. In a cluster a
// hash tag follows, "{N}." where N is the channel's shard (see Sharding),
// so that every key of a channel and its pub/sub channel live in one
// slot. With base standing for that start:
//
//	<base>c.<channel>             pub/sub: publications, join and leave of the channel
//	<base>control                 pub/sub: control messages (shard 0 of the first Redis)
//	<base>replid                  string "<token>:<id>": the server's replication id, left
//	                              by a publish pipeline's first call for the calls after it
//	<base>s.<channel>             stream: history, entry ID "<offset>-0",
//	                              fields d (publication) and x (expiry, Unix ms)
//	<base>m.<channel>             hash: stream meta: e epoch, o top offset,
//	                              r replication id of the master that wrote it,
//	                              p previous publication (for delta compression)
//	<base>i.<len>.<channel><key>  string "<offset>:<epoch>": an idempotent publish's result
//	<base>p.h.<channel>           hash: client ID -> presence ClientInfo
//	<base>p.z.<channel>           sorted set: client ID scored by expiry (Unix ms)
//	<base>p.c.<channel>           hash: client ID -> user ID
//	<base>p.u.<channel>           hash: user ID -> number of present clients
//	<base>w.<scope>               pub/sub: publications of a pattern scope's channels of
//	                              this base, with their channel (see Pattern delivery)
//	<base>map.…                   map channels (see Map channels and map_keys.go)
//
// # Publishing
//
// Publish runs one Lua script (lua/publish.lua) in the channel's Redis.
// In one atomic step it returns the remembered result for a repeated
// idempotency key; with history on, it creates the meta if it is missing
// (a new epoch, the old stream deleted), increments the offset, appends
// the publication to the stream (XADD with exact MAXLEN, so the stream
// keeps HistorySize entries) and sets the stream's TTL; it keeps the
// publication as the delta base, or drops the base for a publish without
// delta; extends the meta's TTL (never shortening it); publishes the
// pub/sub message; and stores the idempotency result. Because Redis runs
// scripts one at a time, the order of offsets is the order of pub/sub
// messages for every publisher on every node.
//
// A stream's meta found written under another master's replication id (a
// failover or a restart happened since, which may have lost the last
// writes) gets a new epoch before the publish script uses it
// (lua/stream_common.lua): an offset is never handed out twice in one
// epoch. The script reads the id from INFO once per pipeline and key base
// (per call in a cluster); the history script needs no check. Config.SyncReplicas adds a WAIT to every publish
// pipeline so that acknowledged publications survive a failover.
//
// The node builds the publication bytes; the script appends the stream
// position (offset, epoch, delta flag, previous publication) to the
// pub/sub message as protobuf fields it encodes itself, a few tags and
// varints, so no decoding happens in Redis.
//
// PublishMany (Publish is PublishMany with one item) sends the script
// calls of all its items that go to one Redis in one pipeline (EVALSHA,
// one round trip, one Redis wake-up for many scripts), and the pipelines
// of several Redis servers at the same time. Redis runs a connection's
// commands in the order sent, so per channel the items keep their order;
// calls from concurrent PublishMany (several API requests) share the
// connection and are pipelined with each other by rueidis. A call that
// failed with NOSCRIPT (a Redis restarted or flushed its scripts) is sent
// again, in order with the others of its pipeline that failed so, by
// EVAL, which loads the script; unless a later call of
// its channel in the same pipeline ran (another node loaded the script in
// between, as Redis serves other connections between parts of a long
// pipeline): it would then take an offset after that one, so it fails
// instead, wrapping broker.ErrNotAvailable. A call with an idempotency key
// that failed on the connection is sent again too; its first attempt may
// have run with only the reply lost, and the retry then reports it
// Suppressed at its position.
//
// Each stream entry carries its own expiry, and the history script
// (lua/history.lua) skips entries past it, so a publication leaves history
// HistoryTTL after it was published, as with the memory broker; the stream
// key itself expires HistoryTTL after the last publish. History follows
// the memory broker's rules (see package memory): it creates the meta when
// missing so that subscribers learn the epoch before the first publish,
// Since is exclusive, reverse with Since goes backwards, and
// broker.ErrUnrecoverablePosition means only "other epoch" or "offset
// past the top". Expiry times come from Redis (TIME), not from the nodes'
// clocks.
//
// # Store
//
// Engine.Store returns a broker.Store for a broker whose pub/sub keeps no
// history (NATS): the NATS broker appends to it to get each publication's
// position, then delivers the publication itself. Store.Append is
// PublishMany without the pub/sub message: the same script in the same
// pipelines, with the publish command argument empty, so offsets, epochs
// (the replication id rule included), history, idempotency results,
// versions, Config.SyncReplicas and the delta base behave exactly as for
// the Broker, on the same keys. The script stores the item's Time instead
// of the node's clock, and, for an item with UseDelta, returns the delta
// base it replaces (the previous publication, if that one asked for delta
// too), which Append sets as the item's Prev. History and RemoveHistory
// are the Broker's.
//
// The Engine owns the connections. The Store owns nothing: Store.Close
// only stops the store, so whoever was given it may close it while the
// Engine's PresenceManager still serves; Engine.Close closes the store
// and the connections.
//
// # Delivery and order
//
// Each shard has one pub/sub connection (SUBSCRIBE, or SSUBSCRIBE in a
// cluster) whose reader hands messages, in the order Redis sent them, to a
// queue drained by one goroutine that calls the EventHandler. A channel
// always uses the same connection, so its publications reach the handler
// in offset order, one call at a time. Subscribe returns once Redis confirmed
// the subscription: everything published after it returns is delivered.
// A node receives its own publications through pub/sub too.
//
// Each shard's connection also subscribes the shard's group channel
// (<base>g.<shard>), before its channels. PublishMany sends the items
// that would each be a plain PUBLISH of the same message (a broadcast
// into channels without history) as one PUBLISH per shard to that
// channel, naming the channels; a node hands the publication to each of
// them that it subscribed. It costs Redis one command and each node one
// message per shard instead of one per channel, and keeps each channel's
// order (group.go). A Redis ACL that limits pub/sub channels must allow
// the group channels as it allows the channels.
//
// The goroutine takes everything queued at once, up to 256 messages
// (dispatch.go): consecutive publications of one channel become one
// broker.Run, and the runs go to HandleRuns in one call, so that under
// load the engine gives each subscriber a stretch of publications in one
// step and wakes each connection once for all of them. A join, leave,
// control message or loss report ends the call: it is handled after the
// publications before it. When the node keeps up, the queue holds one
// message at a time and nothing waits to be grouped.
//
// # Pattern delivery
//
// Broker implements broker.PatternBroker. A publish with
// PublishOptions.PatternScope makes the publish script send a second
// message, after the channel's own and with the same command, to the
// scope's pub/sub channel of the channel's base, <base>w.<scope>: the
// publication with its offset and epoch and the channel's name (no delta
// flag or previous publication), which the script appends as one more
// protobuf field. Being sent by the same script, it follows the channel's
// offset order. Without a scope the script compares one empty string and
// sends nothing more.
//
// SubscribePatternScope subscribes the scope's pub/sub channels (never
// PSUBSCRIBE: a scope is taken byte for byte) on pattern connections made
// on the first call, and returns once every one confirmed; it counts
// calls per scope, so that the last UnsubscribePatternScope unsubscribes,
// and undoes what it subscribed when one connection fails. Outside a
// cluster every base of a Redis is the same, and a node has one pattern
// connection per Redis (SUBSCRIBE <prefix>.w.<scope>): with several
// Config.Addresses every Redis carries the scope, because a channel's
// script runs on the channel's Redis. In a cluster the second message is
// an SPUBLISH in the slot of the channel's base, which the script may send
// as its keys are in that slot, and a node has one pattern connection per
// base (Config.ClusterShards of them), each SSUBSCRIBEd to the scope's
// channel of its base on the master serving the base's slot. Either way a
// channel always reaches this node over one connection, in order, and in
// a cluster straight from the master that ran the script, never over the
// cluster bus: a bus link that is not up yet after a restart would drop
// it silently. Publications go to the EventHandler's
// HandleRuns, in runs whose Scope is set, from the connection's own
// goroutine.
//
// A pattern connection reconnects and subscribes its scopes again like the
// others, and follows slot moves and failovers the same way (Redis drops
// shard channel subscriptions of a slot that leaves the node), but there
// is nothing to recover: what was published meanwhile is lost for this
// node's pattern subscribers. Each restored scope is reported to an
// EventHandler that implements broker.PatternScopeLostHandler, in order
// with the publications that connection carries, as restored channels are
// to a SubscriptionLostHandler; so is a scope whose message could not be
// decoded, at its place. A cluster master that restarts or fails over
// thus has the scopes reported lost by the pattern connections of the
// bases it serves, before any of their later publications. Broker.Healthy
// reports the pattern connections too once they exist.
//
// # Sharding
//
// A channel's place comes from a fixed hash of its name (FNV-1a with a
// Murmur3 finalizer), the same on every node. With several
// Config.Addresses, jump consistent hashing picks the Redis, so adding
// one moves only its share of channels. Within a Redis the hash picks one
// of Config.PubSubShards pub/sub connections. In a cluster it picks one of
// Config.ClusterShards hash tags, each with its own connection to the
// node serving the tag's slot; every node of a Gyre cluster must use the
// same addresses, order and shard counts.
//
// # Resilience
//
// Every command runs under Config.IOTimeout, and rueidis pings idle
// connections, so a dead or hung Redis makes calls fail instead of wait.
// Errors that mean Redis cannot serve now (refused or broken connections,
// timeouts, LOADING, READONLY, CLUSTERDOWN, ...) wrap
// broker.ErrNotAvailable. History and presence calls, and publishes with
// an idempotency key, are retried once when the connection they found was
// broken; a plain publish is not, because it may have run.
//
// A goroutine per shard keeps its pub/sub connection: when it breaks (or
// Redis drops a subscription, as it does when a cluster slot moves) it
// reconnects and subscribes every channel again: at once after a
// connection that was up for a while, then with jittered waits that double
// from 25 ms up to 250 ms, so that it is back within about a quarter of a
// second of Redis. It logs the loss and the return (at warn and info
// level), and a failing Redis every 10 s, each failed attempt at debug
// level only. Meanwhile Broker.Healthy returns an error, and Subscribe fails with
// broker.ErrNotAvailable. Publications sent while a subscription was down
// are lost for this node, so each restored channel is reported to an
// EventHandler that implements SubscriptionLostHandler, in order with its
// publications, for the engine to recover from History. A Sentinel setup
// follows failovers: besides the connections Sentinel drops, every 500 ms
// it replaces pub/sub connections on a server whose replication id is not
// the master's. A cluster follows slot moves.
//
// # Map channels
//
// Engine.MapBroker returns a broker.MapBroker on the engine's Redis;
// NewMapBroker makes one with connections of its own, for map channels
// kept in another Redis setup. A map channel lives in the same place as
// a stream channel of its name (its Redis, shard and cluster hash tag),
// under keys of its own: a meta hash (epoch, top offset), a state hash
// (key to entry), a sorted set of its keys (for pages in key order), a
// sorted set of key expiry times, a hash of key versions, and a Redis
// stream of changes in modes that keep one. Entries and changes are the
// MapEntry protobuf of internal/wirepb.
//
// Every change is one Lua script (lua/map_publish.lua) that checks the
// idempotency key, the key mode and the version, takes the next offset,
// writes the state, appends to the stream (trimmed to StreamSize, expiring
// StreamTTL after the last change), and publishes the change on the
// channel's map pub/sub channel, <base>map.c.<channel>: the order of
// offsets is the order of messages for every node. The meta, the state
// and what goes with it share one TTL, MetaTTL after the last change (none
// when zero), kept at least until the last key expired; a meta found
// missing starts a new epoch and drops whatever was left of the old one.
// Reads create the meta when missing, so that a reader learns the epoch
// the next change continues. ReadState pages through the sorted set of
// keys: at most Limit entries in key order, exactly once each for keys
// present throughout, the cursor holding the page's last key, the
// channel's epoch and a check of the channel's name.
//
// The MapBroker's pub/sub runs on connections of its own, kept exactly as
// the Broker keeps its (Delivery and order, Resilience): channels reach
// the RunHandler in offset order, and a channel whose subscription was
// restored is reported to a handler that implements
// broker.SubscriptionLostHandler, in order with its changes.
//
// A write of a key with a TTL scores it in the channel's expiry set and
// files the channel in its key base's index of channels with expiring
// keys. Every running MapBroker looks at each index every 500 ms and, for
// each channel due, runs lua/map_expire.lua, which removes up to 100
// expired keys, each as a change with Removed set. Scripts run one at a
// time, so when several nodes look at once each expiry is removed once.
// Expiry times come from Redis's clock.
//
// # Presence
//
// Presence uses a hash of entries and a sorted set of expiry times per
// channel (hash field expiry needs Redis 7.4), and a per-user count, so
// PresenceStats costs two HLENs. The scripts drop expired entries first;
// all four keys expire Config.PresenceTTL after the channel's last
// AddPresence.
package redis
