-- Drops a map channel: meta, state with its key order, expiry times,
-- versions and stream, and its place in the base's expiry index. The next
-- change starts a new epoch.
--
-- KEYS[1-7] the channel's keys (map_common.lua)
-- ARGV[1] channel
redis.call('DEL', meta, state, expiry, stream, versions, order)
redis.call('ZREM', index, ARGV[1])
return 0
