-- Writes or removes one key of a map channel: idempotency, key mode and
-- version checks, the next offset, state, expiry time, stream and pub/sub
-- message, in one step, so that offsets and messages are in the same
-- order for every publisher.
--
-- KEYS[1-7] the channel's keys (map_common.lua), KEYS[8] the idempotency
-- result (KEYS[1] again when there is no idempotency key)
-- ARGV[1] "p" to write, "r" to remove
-- ARGV[2] channel
-- ARGV[3] key
-- ARGV[4] MapEntry without offset: the value written, or the removal
-- (which gets the removed entry's tags)
-- ARGV[5] pub/sub channel, ARGV[6] publish command (PUBLISH or SPUBLISH)
-- ARGV[7] epoch for a new meta
-- ARGV[8] stream size, 0 without stream; ARGV[9] stream TTL, ms
-- ARGV[10] meta TTL, ms, 0 forever; ARGV[11] key TTL, ms, 0 no expiry
-- ARGV[12] idempotency result TTL, ms, 0 without idempotency key
-- ARGV[13] "1" for delta
-- ARGV[14] version, decimal, "0" for none; ARGV[15] version epoch
-- ARGV[16] key mode: "", "if_new" or "if_exists"
-- ARGV[17] "1" to extend an existing key's life when if_new suppresses
-- ARGV[18] "1" when a restart of this Redis loses no acknowledged write
-- Returns {offset, epoch, suppress reason ("" when the change was made)}.
local idem = KEYS[8]
local op, channel, key, entry = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local pubsub, command = ARGV[5], ARGV[6]
local streamSize, streamTTL = tonumber(ARGV[8]), tonumber(ARGV[9])
local metaTTL, keyTTL, idemTTL = tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[12])
local delta, version, versionEpoch = ARGV[13] == '1', ARGV[14], ARGV[15]
local keyMode, refresh = ARGV[16], ARGV[17] == '1'

if idemTTL > 0 then
  local seen = redis.call('GET', idem)
  if seen then
    local o, e = string.match(seen, '^(%d+):(.*)$')
    return {tonumber(o), e, 'idempotency'}
  end
end

local epoch, settings = openMeta(ARGV[7], channel, metaTTL, ARGV[18])
local function suppressed(reason)
  return {tonumber(redis.call('HGET', meta, 'o')), epoch, reason}
end

local offset
if op == 'r' then
  local removed = forget(key)
  if not removed then
    return suppressed('key_not_found')
  end
  offset = change(epoch, key, entry .. entryTags(removed), false, nil, streamSize, streamTTL, command, pubsub)
else
  -- A plain write needs no look at the key; with delta, prev tells.
  local prev, exists = nil, false
  if delta then
    prev = redis.call('HGET', state, key)
    exists = prev ~= false
  elseif keyMode ~= '' then
    exists = redis.call('HEXISTS', state, key) == 1
  end
  if keyMode == 'if_new' and exists then
    if refresh and keyTTL > 0 then
      redis.call('ZADD', expiry, 'XX', nowMillis() + keyTTL, key)
      keepAlive(metaTTL, keyTTL + expirySlack)
    end
    return suppressed('key_exists')
  end
  if keyMode == 'if_exists' and not exists then
    return suppressed('key_not_found')
  end
  if version ~= '0' then
    -- Versions are compared as decimal strings, longer is greater, so
    -- that all of uint64 compares exactly.
    local kept = redis.call('HGET', versions, key)
    if kept then
      local v, e = string.match(kept, '^(%d+):(.*)$')
      if (versionEpoch == '' or e == '' or versionEpoch == e) and
        (#version < #v or (#version == #v and version <= v)) then
        return suppressed('version')
      end
    end
    redis.call('HSET', versions, key, version .. ':' .. versionEpoch)
  end
  local stored
  offset, stored = change(epoch, key, entry, delta, prev, streamSize, streamTTL, command, pubsub)
  store(key, stored)
  if keyTTL > 0 then
    local at = nowMillis() + keyTTL
    redis.call('ZADD', expiry, at, key)
    -- The channel's earliest expiry is at most this one.
    redis.call('ZADD', index, 'LT', at, channel)
  end
end

local current = streamSize .. ':' .. streamTTL .. ':' .. metaTTL
if settings ~= current then
  redis.call('HSET', meta, 'c', current)
end
if op == 'r' then
  keepAlive(metaTTL, 0)
else
  keepAlive(metaTTL, keyTTL + expirySlack)
end
if idemTTL > 0 then
  redis.call('SET', idem, offset .. ':' .. epoch, 'PX', idemTTL)
end
return {offset, epoch, ''}
