-- A node's look at a partition: it renews its reader lease, or takes the
-- lease when nobody has it and it may; as the reader it releases the
-- members of incarnations whose lease ran out, ends the delays that
-- passed, and returns the transitions waiting for its handler, and those
-- dropped since the last look (resetting their count).
--
-- KEYS[5] string: the reader's node, expiring with its lease
-- ARGV[2] node, ARGV[3] reader lease in milliseconds, ARGV[4] "1" to take
-- a free lease, ARGV[5] at most this many transitions to return (0: the
-- node's handler is busy), ARGV[6] channel delay, ARGV[7] user delay (ms),
-- ARGV[8] base, ARGV[9] at most this many members to release or vacate,
-- ARGV[10] backlog.
-- Returns {0} when another node is the reader (or the lease is free and
-- not taken), else {1, epoch, transitions dropped since the last look,
-- length of the stream, then per transition: stream ID, member, type,
-- time, info}.
local reader, node, base = KEYS[5], ARGV[2], ARGV[8]
local owner = redis.call('GET', reader)
if owner ~= node and (owner or ARGV[4] ~= '1') then
  return {0}
end
redis.call('SET', reader, node, 'PX', ARGV[3])
local now = nowMillis()
local channelDelay, userDelay = tonumber(ARGV[6]), tonumber(ARGV[7])
local budget = tonumber(ARGV[9])

local function delayOf(member)
  if string.sub(member, 1, 1) == 'u' then
    return userDelay
  end
  return channelDelay
end

local dead = redis.call('ZRANGEBYSCORE', leases, '-inf', now, 'WITHSCORES', 'LIMIT', 0, 10)
for i = 1, #dead, 2 do
  if budget <= 0 then
    break
  end
  local inc, ends = dead[i], tonumber(dead[i + 1])
  local set = base .. 'n.' .. inc
  local members = redis.call('SPOP', set, budget)
  for _, m in ipairs(members) do
    release(base .. 'k.' .. m, inc, m, ends, delayOf(m), now)
  end
  budget = budget - #members
  if redis.call('EXISTS', set) == 0 then
    redis.call('ZREM', leases, inc)
  end
end
if budget > 0 then
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', pending, '-inf', now, 'LIMIT', 0, budget)) do
    local k = base .. 'k.' .. m
    redis.call('ZREM', pending, m)
    if tonumber(redis.call('HGET', k, 'c') or 0) <= 0 then
      emit(m, 'v', redis.call('HGET', k, 'v') or now, redis.call('HGET', k, 'i'))
      redis.call('DEL', k)
    end
  end
end

-- After the sweep, whose vacates may have dropped some.
local dropped = redis.call('HGET', meta, 'd')
if dropped then
  redis.call('HDEL', meta, 'd')
end
local out = {1, redis.call('HGET', meta, 'e') or '', tonumber(dropped or 0), redis.call('XLEN', stream)}
local count = tonumber(ARGV[5])
if count > 0 then
  for _, e in ipairs(redis.call('XRANGE', stream, '-', '+', 'COUNT', count)) do
    local f = e[2]
    out[#out + 1] = e[1]
    out[#out + 1] = f[2]
    out[#out + 1] = f[4]
    out[#out + 1] = f[6]
    out[#out + 1] = f[8]
  end
end
return out
