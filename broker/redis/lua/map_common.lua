-- Shared by the map scripts (see map_broker.go). A map channel's keys come
-- first in KEYS, in this order: 1 meta hash (e epoch, o top offset; ss, st,
-- mt the stream size, stream TTL and meta TTL of the last change, for the
-- expiry script), 2 state hash (key -> MapEntry), 3 sorted set of key
-- expiry times (Unix ms, Redis clock), 4 stream (ID "<offset>-0", fields k
-- key and d MapEntry), 5 the key base's index of channels with expiring
-- keys (channel scored by its earliest expiry), 6 hash of versions (key ->
-- "<version>:<version epoch>" of its last versioned write), 7 sorted set of
-- the state's keys, all scored 0, so that state pages go in key order.
local meta, state, expiry, stream, index, versions, order = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]

-- expirySlack, ms, is how long a channel's meta outlives its last key's
-- expiry at least, whatever its meta TTL: the removal of the key is a
-- change of the channel, made by a node's expiry goroutine (every 500 ms,
-- mapExpireEvery), which must still find the meta.
local expirySlack = 5000

-- varint encodes n as a protobuf base-128 varint; Lua numbers are exact
-- up to 2^53, far beyond any offset or time.
local function varint(n)
  local out = {}
  while n >= 128 do
    out[#out + 1] = string.char(n % 128 + 128)
    n = math.floor(n / 128)
  end
  out[#out + 1] = string.char(n)
  return table.concat(out)
end

-- readVarint decodes the varint at position i of s: its value and the
-- position after it, or nil at the end of s.
local function readVarint(s, i)
  local n, mul = 0, 1
  while true do
    local b = string.byte(s, i)
    if not b then
      return nil, i
    end
    i = i + 1
    n = n + (b % 128) * mul
    if b < 128 then
      return n, i
    end
    mul = mul * 128
  end
end

-- entryTags returns the tags of a stored MapEntry (field 4, one map entry
-- each) as they are encoded, for the removal that ends the entry: the
-- other fields are skipped by their wire type.
local function entryTags(e)
  local out, i, n = {}, 1, #e
  while i <= n do
    local start, tag = i, nil
    tag, i = readVarint(e, i)
    if not tag then
      break
    end
    local field, wire = math.floor(tag / 8), tag % 8
    if wire == 0 then
      local v
      v, i = readVarint(e, i)
      if not v then
        break
      end
    elseif wire == 2 then
      local l
      l, i = readVarint(e, i)
      if not l then
        break
      end
      i = i + l
      if field == 4 then
        out[#out + 1] = string.sub(e, start, i - 1)
      end
    elseif wire == 1 then
      i = i + 8
    elseif wire == 5 then
      i = i + 4
    else
      break
    end
  end
  return table.concat(out)
end

local function nowMillis()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- openMeta returns the channel's epoch, starting the channel over with
-- newEpoch when it has no meta (never written, cleared, or expired): the
-- state, expiry times and stream of an earlier epoch go with it, since
-- their offsets would not follow the new epoch's. A new meta lives ttl
-- milliseconds (0: forever) unless a change keeps it alive.
local function openMeta(newEpoch, channel, ttl)
  local epoch = redis.call('HGET', meta, 'e')
  if epoch then
    return epoch
  end
  redis.call('DEL', state, expiry, stream, versions, order)
  redis.call('ZREM', index, channel)
  redis.call('HSET', meta, 'e', newEpoch, 'o', 0)
  if ttl > 0 then
    redis.call('PEXPIRE', meta, ttl)
  end
  return newEpoch
end

-- keepAlive gives meta, state and what goes with it one life, ttl
-- milliseconds from now (0: forever), so that none outlives the others:
-- state without its meta would start a new epoch with old entries, a meta
-- without its state would keep the epoch of entries that vanished
-- unannounced. The life lasts at least until the last key expires.
local function keepAlive(ttl)
  if ttl > 0 then
    local last = redis.call('ZRANGE', expiry, -1, -1, 'WITHSCORES')
    if last[2] then
      ttl = math.max(ttl, tonumber(last[2]) - nowMillis() + expirySlack)
    end
  end
  for _, k in ipairs({meta, state, expiry, versions, order}) do
    if ttl > 0 then
      redis.call('PEXPIRE', k, ttl)
    else
      redis.call('PERSIST', k)
    end
  end
end

-- store writes key's entry, entering a new key in the key order.
local function store(key, entry)
  if redis.call('HSET', state, key, entry) == 1 then
    redis.call('ZADD', order, 0, key)
  end
end

-- forget drops what the channel keeps of key besides its stream: its
-- entry, place in the key order, expiry time and version. It returns the
-- entry, or nil when the key was not there.
local function forget(key)
  local e = redis.call('HGET', state, key)
  if not e then
    return nil
  end
  redis.call('HDEL', state, key)
  redis.call('ZREM', order, key)
  redis.call('ZREM', expiry, key)
  redis.call('HDEL', versions, key)
  return e
end

-- indexExpiry files the channel in the base's index under its earliest
-- key expiry, or takes it out when no key of it expires.
local function indexExpiry(channel)
  local first = redis.call('ZRANGE', expiry, 0, 0, 'WITHSCORES')
  if first[1] then
    redis.call('ZADD', index, first[2], channel)
  else
    redis.call('ZREM', index, channel)
  end
end

-- change records a change of key: it takes the next offset, appends the
-- entry (a MapEntry without offset) with the offset to the stream when
-- streamSize is positive, and sends the MAP_CHANGE message; with delta,
-- the message carries the delta flag and prev, the key's previous entry.
-- Returns the offset and the entry with it.
local function change(epoch, key, entry, delta, prev, streamSize, streamTTL, command, pubsub)
  local offset = redis.call('HINCRBY', meta, 'o', 1)
  -- MapEntry field 1 is the offset.
  entry = entry .. '\8' .. varint(offset)
  if streamSize > 0 then
    redis.call('XADD', stream, 'MAXLEN', streamSize, offset .. '-0', 'k', key, 'd', entry)
    if streamTTL > 0 then
      redis.call('PEXPIRE', stream, streamTTL)
    end
  end
  -- Message fields: 1 type (4 MAP_CHANGE), 2 entry, 3 offset, 4 epoch,
  -- 10 key, 5 delta, 6 prev.
  local msg = '\8\4\18' .. varint(#entry) .. entry .. '\24' .. varint(offset) ..
    '\34' .. varint(#epoch) .. epoch .. '\82' .. varint(#key) .. key
  if delta then
    msg = msg .. '\40\1'
    if prev then
      msg = msg .. '\50' .. varint(#prev) .. prev
    end
  end
  redis.call(command, pubsub, msg)
  return offset, entry
end
