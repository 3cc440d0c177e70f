-- Shared by the map scripts (see map_broker.go), after stream_common.lua.
-- A map channel's keys come first in KEYS, in this order: 1 meta hash (e
-- epoch, o top offset, r replication id of the server that wrote it, c
-- "<stream size>:<stream TTL>:<meta TTL>" of the last write, for the expiry
-- script), 2 state hash (key -> MapEntry), 3 sorted set of key
-- expiry times (Unix ms, Redis clock), 4 stream (ID "<offset>-0", fields k
-- key and d MapEntry), 5 the key base's index of channels with expiring
-- keys (channel scored by its earliest expiry, or earlier: the expiry
-- script sets it right when it finds nothing due), 6 hash of versions (key ->
-- "<version>:<version epoch>" of its last versioned write), 7 sorted set of
-- the state's keys, all scored 0, so that state pages go in key order.
local meta, state, expiry, stream, index, versions, order = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]

-- expirySlack, ms, is how long a channel's meta outlives its last key's
-- expiry at least, whatever its meta TTL: the removal of the key is a
-- change of the channel, made by a node's expiry goroutine (every 500 ms,
-- mapExpireEvery), which must still find the meta.
local expirySlack = 5000

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

-- openMeta returns the channel's epoch and settings (meta field c),
-- starting the channel over with newEpoch when it has no meta (never
-- written, cleared, or expired): the state, expiry times and stream of an
-- earlier epoch go with it, since their offsets would not follow the new
-- epoch's. A new meta lives ttl milliseconds (0: forever) unless a change
-- keeps it alive, and records the replication id of this server
-- (stream_common.lua). For a change (durable set: "1" when restarts lose
-- nothing), a meta written under another id gets newEpoch as streams do
-- (continueStream): this server may lack changes that were delivered, and
-- must not hand their offsets out again in the same epoch.
local function openMeta(newEpoch, channel, ttl, durable)
  local m = redis.call('HMGET', meta, 'e', 'r', 'c')
  if m[1] then
    if durable == nil then
      return m[1], m[3]
    end
    local rid, promoted = serverReplicationID()
    return continueStream(meta, m[1], m[2], rid, promoted, durable == '1', newEpoch), m[3]
  end
  redis.call('DEL', state, expiry, stream, versions, order)
  redis.call('ZREM', index, channel)
  redis.call('HSET', meta, 'e', newEpoch, 'o', 0, 'r', (serverReplicationID()))
  if ttl > 0 then
    redis.call('PEXPIRE', meta, ttl)
  end
  return newEpoch, nil
end

-- keepAlive gives meta, state and what goes with it one life, so that
-- none outlives the others: state without its meta would start a new
-- epoch with old entries, a meta without its state would keep the epoch
-- of entries that vanished unannounced. The life is ttl milliseconds from
-- now, or minLife if longer (a key expiring then, and expirySlack), and
-- never shorter than what the meta had left, which covers the keys
-- written before; ttl 0 is forever.
local function keepAlive(ttl, minLife)
  local left = redis.call('PTTL', meta)
  if ttl <= 0 then
    -- Without a TTL on the meta none of the others has one.
    if left ~= -1 then
      for _, k in ipairs({meta, state, expiry, versions, order}) do
        redis.call('PERSIST', k)
      end
    end
    return
  end
  ttl = math.max(ttl, minLife, left)
  for _, k in ipairs({meta, state, expiry, versions, order}) do
    redis.call('PEXPIRE', k, ttl)
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
    '\34' .. varint(#epoch) .. epoch .. '\82' .. varint(#key) .. key .. deltaFields(delta, prev)
  redis.call(command, pubsub, msg)
  return offset, entry
end
