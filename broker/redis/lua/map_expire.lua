-- Removes a map channel's keys whose time has come, at most ARGV[4] of
-- them, each as a change (offset, stream, pub/sub message) like a
-- removal; the stream and meta settings are the last write's, kept in the
-- meta. Several nodes may run it for one channel at once: Redis runs one
-- script at a time, and a key removed by one is gone for the next, so each
-- expiry makes one change.
--
-- KEYS[1-7] the channel's keys (map_common.lua)
-- ARGV[1] channel, ARGV[2] pub/sub channel, ARGV[3] publish command
-- ARGV[4] batch size
-- Returns how many keys were due.
local channel, pubsub, command = ARGV[1], ARGV[2], ARGV[3]
local now = nowMillis()
local due = redis.call('ZRANGEBYSCORE', expiry, '-inf', now, 'LIMIT', 0, tonumber(ARGV[4]))
local epoch = redis.call('HGET', meta, 'e')
if not epoch then
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
local m = redis.call('HMGET', meta, 'ss', 'st', 'mt')
local streamSize, streamTTL, metaTTL = tonumber(m[1]) or 0, tonumber(m[2]) or 0, tonumber(m[3]) or 0
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
keepAlive(metaTTL)
return #due
