package redis

import "strconv"

// Key and channel names. base is the prefix and a dot, plus a cluster hash
// tag ("gyre." or "gyre.{3}."); everything of one channel shares its base,
// so that in a cluster one Lua script may touch it all.
//
//	<base>c.<channel>             pub/sub channel of publications, join, leave
//	<base>control                 pub/sub channel of control messages
//	<base>replid                  string: the replication id of the server (see lua/stream_common.lua)
//	<base>s.<channel>             stream: history entries
//	<base>m.<channel>             hash: stream meta (offset, epoch, previous publication)
//	<base>i.<len>.<channel><key>  string: result of an idempotent publish
//	<base>p.h.<channel>           hash: client ID -> presence info
//	<base>p.z.<channel>           sorted set: client ID scored by expiry time
//	<base>p.c.<channel>           hash: client ID -> user ID
//	<base>p.u.<channel>           hash: user ID -> number of present clients
//
//	<base>g.<shard>               pub/sub channel of publications grouped for a shard's channels
//	<base>w.<scope>               pub/sub channel of a pattern scope's publications
//	<base>probe.<token>           pub/sub channel of one connection's backlog probes
//
// A pattern scope (broker.PublishOptions.PatternScope) spans channels of
// every base: a channel's publication goes to the scope's pub/sub channel
// of the channel's own base, and a node holding the scope subscribes it
// under every base (patterns.go).
const (
	pubsubInfix   = "c."
	controlSuffix = "control"
	streamInfix   = "s."
	metaInfix     = "m."
	idemInfix     = "i."
	presenceInfix = "p.h."
	expiryInfix   = "p.z."
	clientInfix   = "p.c."
	userInfix     = "p.u."
	scopeInfix    = "w."
	groupInfix    = "g."
	probeInfix    = "probe."
)

const replIDSuffix = "replid"

func streamKey(base, channel string) string { return base + streamInfix + channel }
func metaKey(base, channel string) string   { return base + metaInfix + channel }

// idemKey prefixes the channel with its length so that no pair of channel
// and key spells another pair's name.
func idemKey(base, channel, key string) string {
	return base + idemInfix + strconv.Itoa(len(channel)) + "." + channel + key
}

// presenceKeys returns the four keys of a channel's presence, in the order
// the presence scripts take them.
func presenceKeys(base, channel string) []string {
	return []string{
		base + presenceInfix + channel,
		base + expiryInfix + channel,
		base + clientInfix + channel,
		base + userInfix + channel,
	}
}
