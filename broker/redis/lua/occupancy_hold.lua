-- An incarnation holds a member: the first holder occupies it, or
-- cancels its pending vacate (no event); a vacate whose delay passed
-- before a reader ended it is made first.
--
-- KEYS[5] the member's hash, KEYS[6] the incarnation's set of members
-- ARGV[2] incarnation, ARGV[3] member, ARGV[4] info, ARGV[5] backlog
-- Returns 1 when it made events, 0 when not, -1 when the incarnation's
-- lease is gone (the node must start a new one).
local k, held = KEYS[5], KEYS[6]
local inc, member, info = ARGV[2], ARGV[3], ARGV[4]
local now = nowMillis()
local ends = redis.call('ZSCORE', leases, inc)
if not ends or tonumber(ends) <= now then
  return -1
end
redis.call('SADD', held, member)
if redis.call('HSETNX', k, 'n' .. inc, 1) == 0 then
  return 0
end
if redis.call('HINCRBY', k, 'c', 1) > 1 then
  -- Other holders whose lease ran out leave now, with no event, rather
  -- than when a reader releases them as of their lease's end: a node
  -- that holds its keys again under a new incarnation and then releases
  -- one must not see it vacated as of the old lease's end.
  local base = string.sub(k, 1, #k - #member - 2)
  local fields = redis.call('HKEYS', k)
  for _, f in ipairs(fields) do
    if string.sub(f, 1, 1) == 'n' and f ~= 'n' .. inc then
      local other = string.sub(f, 2)
      local until_ = redis.call('ZSCORE', leases, other)
      if not until_ or tonumber(until_) <= now then
        redis.call('HDEL', k, f)
        redis.call('HINCRBY', k, 'c', -1)
        redis.call('SREM', base .. 'n.' .. other, member)
      end
    end
  end
  return 0
end
local due = redis.call('ZSCORE', pending, member)
if due then
  redis.call('ZREM', pending, member)
  local leftAt = redis.call('HGET', k, 'v')
  redis.call('HDEL', k, 'v')
  if tonumber(due) > now then
    return 0
  end
  emit(member, 'v', leftAt or now, redis.call('HGET', k, 'i'))
end
redis.call('HSET', k, 'i', info)
emit(member, 'o', now, info)
return 1
