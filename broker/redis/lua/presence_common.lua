-- Shared head of the presence scripts.
--
-- KEYS[1] hash client -> info, KEYS[2] sorted set client scored by expiry
-- (Unix milliseconds), KEYS[3] hash client -> user, KEYS[4] hash user ->
-- number of present clients. Redis before 7.4 cannot expire hash fields,
-- so the sorted set carries each entry's expiry and every script first
-- drops the entries that are past it.
local infos, expiry, users, counts = KEYS[1], KEYS[2], KEYS[3], KEYS[4]

local function nowMillis()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function uncount(user)
  if redis.call('HINCRBY', counts, user, -1) <= 0 then
    redis.call('HDEL', counts, user)
  end
end

local function drop(client)
  redis.call('HDEL', infos, client)
  local user = redis.call('HGET', users, client)
  if user then
    redis.call('HDEL', users, client)
    uncount(user)
  end
end

local function sweep(now)
  local gone = redis.call('ZRANGEBYSCORE', expiry, '-inf', now)
  if #gone == 0 then
    return
  end
  redis.call('ZREMRANGEBYSCORE', expiry, '-inf', now)
  for _, client in ipairs(gone) do
    drop(client)
  end
end
