-- An incarnation no longer holds a member; the last holder starts the
-- delay (or, with none, vacates).
--
-- KEYS[5] the member's hash, KEYS[6] the incarnation's set of members
-- ARGV[2] incarnation, ARGV[3] member, ARGV[4] delay in milliseconds,
-- ARGV[5] backlog
-- Returns 1 when it made an event, else 0.
redis.call('SREM', KEYS[6], ARGV[3])
local now = nowMillis()
return release(KEYS[5], ARGV[2], ARGV[3], now, tonumber(ARGV[4]), now)
