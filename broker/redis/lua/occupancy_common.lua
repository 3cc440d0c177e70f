-- Shared head of the occupancy scripts (occupancy*.go). Every key of a
-- partition starts with its base, which carries the partition's hash tag,
-- so one script may touch them all in a cluster.
--
-- KEYS[1] sorted set: incarnation -> end of its lease (Unix ms)
-- KEYS[2] sorted set: member -> end of its delay, for members whose last
--         holder left
-- KEYS[3] stream: the transitions (fields k member, t "o" or "v", m time,
--         i info), trimmed by the reader once handed over
-- KEYS[4] hash: e -> the stream's epoch, part of every event ID; d ->
--         transitions dropped since the reader last looked
-- Built from the base (ARGV of the scripts that need them):
-- <base>k.<member> hash: c number of holders, n<incarnation> one per
--         holder, i info of the holder that occupied it, v when its last
--         holder left (while its delay runs)
-- <base>n.<incarnation> set: the members an incarnation holds
-- ARGV[1] an epoch for the stream, taken when it has none.
-- The last ARGV of a script that may make transitions (hold, release,
-- poll): the backlog, at most this many transitions that no reader
-- handed over in the stream; past it the oldest go, counted in d.
local leases, pending, stream, meta = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local newEpoch = ARGV[1]

local function nowMillis()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- emit appends a transition. An exact trim, not XADD's approximate one,
-- so that every transition dropped is counted; XLEN is O(1), and the trim
-- runs only past the backlog.
local function emit(member, typ, ms, info)
  redis.call('HSETNX', meta, 'e', newEpoch)
  redis.call('XADD', stream, '*', 'k', member, 't', typ, 'm', ms, 'i', info or '')
  local backlog = tonumber(ARGV[#ARGV])
  if redis.call('XLEN', stream) > backlog then
    redis.call('HINCRBY', meta, 'd', redis.call('XTRIM', stream, 'MAXLEN', '=', backlog))
  end
end

-- left ends a member whose last holder left at leftAt: vacated now when
-- its delay has passed, else the delay starts. Returns 1 for an event.
local function left(k, member, leftAt, delay, now)
  if leftAt + delay <= now then
    emit(member, 'v', leftAt, redis.call('HGET', k, 'i'))
    redis.call('DEL', k)
    return 1
  end
  redis.call('HSET', k, 'v', leftAt)
  redis.call('ZADD', pending, leftAt + delay, member)
  return 0
end

-- release takes the incarnation off the member's holders, as of leftAt.
local function release(k, inc, member, leftAt, delay, now)
  if redis.call('HDEL', k, 'n' .. inc) == 0 then
    return 0
  end
  if redis.call('HINCRBY', k, 'c', -1) > 0 then
    return 0
  end
  return left(k, member, leftAt, delay, now)
end
