-- Adds or refreshes one entry and keeps the channel's keys alive for the
-- TTL. ARGV[1] client, ARGV[2] info (protobuf ClientInfo), ARGV[3] user,
-- ARGV[4] TTL in milliseconds.
local client, info, user, ttl = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local now = nowMillis()
sweep(now)
local old = redis.call('HGET', users, client)
if old ~= user then
  if old then
    uncount(old)
  end
  redis.call('HSET', users, client, user)
  redis.call('HINCRBY', counts, user, 1)
end
redis.call('HSET', infos, client, info)
redis.call('ZADD', expiry, now + ttl, client)
for _, k in ipairs(KEYS) do
  redis.call('PEXPIRE', k, ttl)
end
return 0
