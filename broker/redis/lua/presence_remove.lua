-- Removes one entry. ARGV[1] client.
if redis.call('ZREM', expiry, ARGV[1]) == 1 then
  drop(ARGV[1])
end
return 0
