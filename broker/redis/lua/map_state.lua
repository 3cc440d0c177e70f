-- Reads a page of a map channel's state, in key order, with its stream
-- top, creating the meta when missing so that a reader learns the epoch
-- the next write continues.
--
-- KEYS[1-7] the channel's keys (map_common.lua)
-- ARGV[1] epoch for a new meta, ARGV[2] its TTL, ms, ARGV[3] channel
-- ARGV[4], ARGV[5] "=" and an epoch the channel must have, or "" for
-- any: a revision's, a cursor's
-- ARGV[6] "k" for the entry of key ARGV[7]; "s" for ARGV[8] entries (-1
-- all, 0 none) from ARGV[7], "-" for the first key or "(" and the key
-- after which to start
-- Returns {top, epoch, unrecoverable (0 or 1), where the next page starts
-- ("(" and the page's last key; "" after the last page), key, entry, key,
-- entry, ...}.
local epoch = openMeta(ARGV[1], ARGV[3], tonumber(ARGV[2]))
local top = tonumber(redis.call('HGET', meta, 'o'))
for _, want in ipairs({ARGV[4], ARGV[5]}) do
  if want ~= '' and string.sub(want, 2) ~= epoch then
    return {top, epoch, 1}
  end
end
local out = {top, epoch, 0, ''}
if ARGV[6] == 'k' then
  local v = redis.call('HGET', state, ARGV[7])
  if v then
    out[5], out[6] = ARGV[7], v
  end
  return out
end
local from, limit = ARGV[7], tonumber(ARGV[8])
if limit == 0 then
  return out
end
local ks
if limit > 0 then
  -- One more than the page tells whether another page follows.
  ks = redis.call('ZRANGEBYLEX', order, from, '+', 'LIMIT', 0, limit + 1)
  if #ks > limit then
    ks[#ks] = nil
    out[4] = '(' .. ks[#ks]
  end
else
  ks = redis.call('ZRANGEBYLEX', order, from, '+')
end
-- HMGET in parts: unpack is bounded by the Lua stack.
for i = 1, #ks, 1000 do
  local part = {unpack(ks, i, math.min(i + 999, #ks))}
  local vs = redis.call('HMGET', state, unpack(part))
  for j, k in ipairs(part) do
    if vs[j] then
      out[#out + 1] = k
      out[#out + 1] = vs[j]
    end
  end
end
return out
