-- Reads a page of a map channel's state with its stream top, creating the
-- meta when missing so that a reader learns the epoch the next write
-- continues.
--
-- KEYS[1-5] the channel's keys (map_common.lua)
-- ARGV[1] epoch for a new meta, ARGV[2] its TTL, ms, ARGV[3] channel
-- ARGV[4], ARGV[5] "=" and an epoch the channel must have, or "" for
-- any: a revision's, a cursor's
-- ARGV[6] "k" for the entry of key ARGV[7]; "s" to scan from cursor
-- ARGV[7] for ARGV[8] entries (-1 all, 0 none)
-- Returns {top, epoch, unrecoverable (0 or 1), next cursor ("0" at the
-- end), key, entry, key, entry, ...}.
local epoch = openMeta(ARGV[1], ARGV[3], tonumber(ARGV[2]))
local top = tonumber(redis.call('HGET', meta, 'o'))
for _, want in ipairs({ARGV[4], ARGV[5]}) do
  if want ~= '' and string.sub(want, 2) ~= epoch then
    return {top, epoch, 1}
  end
end
local out = {top, epoch, 0, '0'}
if ARGV[6] == 'k' then
  local v = redis.call('HGET', state, ARGV[7])
  if v then
    out[5], out[6] = ARGV[7], v
  end
  return out
end
local cursor, limit = ARGV[7], tonumber(ARGV[8])
if limit == 0 then
  return out
end
local count = limit
if count < 0 or count > 1000 then
  count = 1000
end
-- COUNT is a hint: a scan step may return nothing, or (a small hash kept
-- as a listpack) everything.
repeat
  local r = redis.call('HSCAN', state, cursor, 'COUNT', count)
  cursor = r[1]
  for _, v in ipairs(r[2]) do
    out[#out + 1] = v
  end
until cursor == '0' or (limit > 0 and (#out - 4) / 2 >= limit)
out[4] = cursor
return out
