-- Drops a map channel: meta, state, expiry times and stream, and its
-- place in the base's expiry index. The next change starts a new epoch.
--
-- KEYS[1-5] the channel's keys (map_common.lua)
-- ARGV[1] channel
redis.call('DEL', meta, state, expiry, stream)
redis.call('ZREM', index, ARGV[1])
return 0
