-- Removes a map channel's keys whose time has come, at most ARGV[4] of
-- them, each as a change (offset, stream, pub/sub message) like a
-- removal; the stream and meta settings are the last write's, kept in the
-- meta. It files the channel in the index under its earliest expiry. Several nodes may run it for one channel at once: Redis runs one
-- script at a time, and a key removed by one is gone for the next, so each
-- expiry makes one change.
--
-- KEYS[1-7] the channel's keys (map_common.lua)
-- ARGV[1] channel, ARGV[2] pub/sub channel, ARGV[3] publish command
-- ARGV[4] batch size
-- ARGV[5] epoch for the channel when this server may lack its last
-- changes, ARGV[6] "1" when restarts lose nothing (map_common.lua, openMeta)
-- Returns how many keys were due.
local channel, pubsub, command = ARGV[1], ARGV[2], ARGV[3]
local now = nowMillis()
local due = redis.call('ZRANGEBYSCORE', expiry, '-inf', now, 'LIMIT', 0, tonumber(ARGV[4]))
if redis.call('EXISTS', meta) == 0 then
  -- The channel is gone (cleared, or expired with its meta): nothing is
  -- left to remove or announce.
  redis.call('DEL', state, expiry, versions, order)
  redis.call('ZREM', index, channel)
  return 0
end
if #due == 0 then
  indexExpiry(channel)
  return 0
end
local epoch, settings = openMeta(ARGV[5], channel, 0, ARGV[6])
local ss, st, mt = string.match(settings or '', '^(%d+):(%d+):(%d+)$')
local streamSize, streamTTL, metaTTL = tonumber(ss) or 0, tonumber(st) or 0, tonumber(mt) or 0
-- MapEntry fields 6 removed and 5 time; the tags follow.
local removal = '\48\1\40' .. varint(now)
for _, key in ipairs(due) do
  local removed = forget(key)
  if removed then
    change(epoch, key, removal .. entryTags(removed), false, nil, streamSize, streamTTL, command, pubsub)
  end
end
redis.call('ZREM', expiry, unpack(due))
indexExpiry(channel)
keepAlive(metaTTL, 0)
return #due
