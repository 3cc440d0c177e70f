-- Lists the channels of a key base whose earliest key expiry has come.
--
-- KEYS[1] the base's index of channels with expiring keys
-- ARGV[1] at most this many channels
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
