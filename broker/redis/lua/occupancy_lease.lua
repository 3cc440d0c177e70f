-- Starts or renews an incarnation's lease.
--
-- ARGV[2] incarnation, ARGV[3] lease in milliseconds, ARGV[4] "1" to
-- start it, else renew it.
-- Returns 1, or 0 when a lease to renew has run out or is gone: the
-- sweep may have released some of its members, so the node must start a
-- new incarnation and hold everything again.
local inc = ARGV[2]
local now = nowMillis()
if ARGV[4] ~= '1' then
  local ends = redis.call('ZSCORE', leases, inc)
  if not ends or tonumber(ends) <= now then
    return 0
  end
end
redis.call('ZADD', leases, now + tonumber(ARGV[3]), inc)
return 1
