-- Publishes one publication, or a run of them into one channel: checks
-- the idempotency key, assigns the next offset and appends to the stream
-- when history is on, keeps the previous publication for delta
-- compression, and sends the pub/sub message (or, for a store, returns
-- the previous publication and sends nothing). All in one script, so
-- offsets and pub/sub order agree for every publisher. When the channel
-- has a pattern scope, the same script also sends the publication to the
-- scope's pub/sub channel, so that order on that path is the same too.
--
-- KEYS[1] stream, KEYS[2] meta hash, KEYS[3] idempotency result,
-- KEYS[4] the key base's replication id (see stream_common.lua)
-- ARGV[1] pub/sub channel
-- ARGV[2] publication, protobuf, offset not set
-- ARGV[3] history size, 0 for no history
-- ARGV[4] history TTL, milliseconds
-- ARGV[5] meta TTL, milliseconds
-- ARGV[6] epoch to use if the stream has none, or starts a new one
-- ARGV[7] "1" for delta compression, "0" without it, "-" without it in a
--         channel that takes none (no delta base to clear)
-- ARGV[8] idempotency result TTL, milliseconds, 0 for no key
-- ARGV[9] publish command: PUBLISH or SPUBLISH; "" sends nothing (a
--         store's append: the caller delivers the publication itself)
-- ARGV[10] pub/sub channel of the pattern scope, "" for none; in a cluster
--          it has the channel's hash tag, so ARGV[9] may send to it
-- ARGV[11] the channel's name, sent with the publication to the scope
-- ARGV[12] version, "0" for none (history only)
-- ARGV[13] version epoch
-- ARGV[14] how to learn the replication id (history only): "o" from INFO
-- (the only call of its pipeline on this key base), "i:<token>" from INFO
-- (the first of several), "k:<token>" from KEYS[4] when the first call
-- left it there (stream_common.lua)
-- ARGV[15] "1" when a restart of this Redis loses no acknowledged write
-- (appendfsync always): streams then keep their epoch across restarts
-- ARGV[16] fields the node encoded that the pub/sub messages start with
-- (the trace), "" for none; never stored
-- ARGV[17...] more publications into the same channel after ARGV[2], with
-- history, without idempotency key, version or delta: a run, which pays
-- once for the reads and the expiries that each publication would pay
-- alone; their offsets follow ARGV[2]'s
-- Returns {offset, epoch, suppressed (0 or 1)}, the offset of ARGV[2], and,
-- when ARGV[9] is "" and the publication asks for delta, the delta base
-- it replaced (the previous publication, protobuf with its offset) as a
-- fourth value.
local stream, meta, idem = KEYS[1], KEYS[2], KEYS[3]
local channel, pub = ARGV[1], ARGV[2]
local size, ttl, metaTTL = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local delta, idemTTL = ARGV[7] == '1', tonumber(ARGV[8])
local version, versionEpoch = tonumber(ARGV[12]), ARGV[13]
local count = 1
if #ARGV > 16 then
  count = #ARGV - 15
  if size <= 0 or delta or idemTTL > 0 or version > 0 then
    return redis.error_reply('a run of publications needs history, and no delta, idempotency key or version')
  end
end
-- pubAt is the i-th publication of the run.
local function pubAt(i)
  if i == 1 then
    return pub
  end
  return ARGV[15 + i]
end

-- Before any early return: the calls after this one in the pipeline read
-- what it stores.
local rid, promoted = nil, false
if size > 0 then
  rid, promoted = replicationID(ARGV[14], KEYS[4], metaTTL)
end

if idemTTL > 0 then
  local seen = redis.call('GET', idem)
  if seen then
    local o, e = string.match(seen, '^(%d+):(.*)$')
    return {tonumber(o), e, 1}
  end
end

-- A stale version (not above the meta's last one, of the same epoch or
-- with no epoch given) publishes nothing and answers the stream's top.
if size > 0 and version > 0 then
  local m = redis.call('HMGET', meta, 'e', 'o', 'v', 've')
  if m[1] and m[3] and (versionEpoch == '' or versionEpoch == m[4]) and version <= tonumber(m[3]) then
    return {tonumber(m[2]), m[1], 1}
  end
end

local function extendMeta()
  if redis.call('PTTL', meta) < metaTTL then
    redis.call('PEXPIRE', meta, metaTTL)
  end
end

local offset, epoch = 0, ''
if size > 0 then
  local m = redis.call('HMGET', meta, 'e', 'r')
  epoch = m[1]
  if not epoch then
    epoch = ARGV[6]
    redis.call('DEL', stream)
    redis.call('HSET', meta, 'e', epoch, 'o', 0, 'r', rid)
  else
    epoch = continueStream(meta, epoch, m[2], rid, promoted, ARGV[15] == '1', ARGV[6])
  end
  offset = redis.call('HINCRBY', meta, 'o', count) - count + 1
  if version > 0 then
    redis.call('HSET', meta, 'v', ARGV[12], 've', versionEpoch)
  end
  local now = redis.call('TIME')
  local expires = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) + ttl
  if count == 1 then
    redis.call('XADD', stream, 'MAXLEN', size, offset .. '-0', 'd', pub, 'x', expires)
  else
    -- One trim for the run: trimming at each append costs more than
    -- the append.
    for i = 1, count do
      redis.call('XADD', stream, (offset + i - 1) .. '-0', 'd', pubAt(i), 'x', expires)
    end
    redis.call('XTRIM', stream, 'MAXLEN', size)
  end
  redis.call('PEXPIRE', stream, ttl)
end

-- The delta base: this publication when it asks for delta, else none,
-- as subscribers get it in full and a later delta must not be computed
-- against an older one.
local prev = nil
if delta then
  prev = redis.call('HGET', meta, 'p')
  -- Publication field 6 is its offset.
  local cur = pub
  if offset > 0 then
    cur = pub .. '\48' .. varint(offset)
  end
  redis.call('HSET', meta, 'p', cur)
elseif ARGV[7] ~= '-' then
  redis.call('HDEL', meta, 'p')
end
if size > 0 or delta then
  extendMeta()
end

local command = ARGV[9]
if command ~= '' then
  -- Message fields: 2 publication, 3 offset, 4 epoch, 5 delta, 6 prev,
  -- 9 channel, after the node's.
  local scope, head, tail = ARGV[10], ARGV[16], deltaFields(delta, prev)
  local epochField = '\34' .. varint(#epoch) .. epoch
  local scopeTail = ''
  if scope ~= '' then
    scopeTail = '\74' .. varint(#ARGV[11]) .. ARGV[11]
  end
  for i = 1, count do
    local p = pubAt(i)
    local msg
    if offset > 0 then
      msg = head .. '\18' .. varint(#p) .. p .. '\24' .. varint(offset + i - 1) .. epochField
    else
      msg = head .. '\18' .. varint(#p) .. p
    end
    redis.call(command, channel, msg .. tail)
    if scope ~= '' then
      -- Pattern subscribers get neither the delta flag nor prev: they
      -- receive publications of many channels and keep no delta base per
      -- channel. The same command: in a cluster an SPUBLISH in the
      -- channel's slot, which the slot's master hands to the connections
      -- subscribed on it (every node holding the scope has one), not over
      -- the cluster bus.
      redis.call(command, scope, msg .. scopeTail)
    end
  end
end

if idemTTL > 0 then
  redis.call('SET', idem, offset .. ':' .. epoch, 'PX', idemTTL)
end
if command == '' and prev then
  return {offset, epoch, 0, prev}
end
return {offset, epoch, 0}
