-- Returns the live entries as {client, info, client, info, ...}, or with
-- ARGV[1] "stats" the numbers {clients, users}.
sweep(nowMillis())
if ARGV[1] == 'stats' then
  return {redis.call('HLEN', infos), redis.call('HLEN', counts)}
end
return redis.call('HGETALL', infos)
