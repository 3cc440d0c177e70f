package redis

import "strconv"

// Key and pub/sub names of map channels (see MapBroker), under the same
// base as the channel's other names (keys.go), so that in a cluster one
// Lua script may touch all of a channel's and its base's index:
//
//	<base>map.c.<channel>              pub/sub: the channel's changes (MAP_CHANGE messages)
//	<base>map.m.<channel>              hash: meta: e epoch, o top offset, ss/st/mt the last
//	                                   write's stream size, stream TTL and meta TTL
//	<base>map.s.<channel>              hash: state: key -> MapEntry
//	<base>map.x.<channel>              sorted set: key scored by its expiry (Unix ms)
//	<base>map.h.<channel>              stream: changes, ID "<offset>-0", fields k key, d MapEntry
//	<base>map.v.<channel>              hash: key -> "<version>:<version epoch>" of its last
//	                                   versioned write
//	<base>map.k.<channel>              sorted set: the state's keys, scored 0 (key order)
//	<base>map.i.<len>.<channel><key>   string "<offset>:<epoch>": an idempotent change's result
//	<base>map.expiring                 sorted set: channels with expiring keys, scored by
//	                                   their earliest expiry
//
// No stream channel's name starts with "map.": the stream infixes are one
// letter and a dot.
const (
	mapPubSubInfix  = "map.c."
	mapMetaInfix    = "map.m."
	mapStateInfix   = "map.s."
	mapExpiryInfix  = "map.x."
	mapStreamInfix  = "map.h."
	mapVersionInfix = "map.v."
	mapOrderInfix   = "map.k."
	mapIdemInfix    = "map.i."
	mapIndexSuffix  = "map.expiring"
)

// mapKeys returns the keys of a map channel in the order the map scripts
// take them (lua/map_common.lua): meta, state, expiry times, stream, the
// base's expiry index, versions, key order.
func mapKeys(base, channel string) []string {
	return []string{
		base + mapMetaInfix + channel,
		base + mapStateInfix + channel,
		base + mapExpiryInfix + channel,
		base + mapStreamInfix + channel,
		base + mapIndexSuffix,
		base + mapVersionInfix + channel,
		base + mapOrderInfix + channel,
	}
}

// mapIdemKey prefixes the channel with its length, as idemKey does.
func mapIdemKey(base, channel, key string) string {
	return base + mapIdemInfix + strconv.Itoa(len(channel)) + "." + channel + key
}
