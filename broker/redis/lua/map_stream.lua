-- Reads changes from a map channel's stream with its top, creating the
-- meta when missing (see map_state.lua). Since is exclusive: forward reads
-- start after it, reverse ones before it. A since position of another
-- epoch or past the top is unrecoverable; changes the stream no longer
-- holds (trimmed, expired) are simply missing, as in history.
--
-- KEYS[1-7] the channel's keys (map_common.lua)
-- ARGV[1] epoch for a new meta, ARGV[2] its TTL, ms, ARGV[3] channel
-- ARGV[4] "1" with a since position, ARGV[5] its offset, ARGV[6] its epoch
-- ARGV[7] limit: 0 none, negative all, positive at most that many
-- ARGV[8] "1" for newest first
-- ARGV[9] "1" when the mode keeps a stream
-- Returns {top, epoch, unrecoverable (0 or 1), key, entry, key, entry, ...}.
local epoch = openMeta(ARGV[1], ARGV[3], tonumber(ARGV[2]))
local top = tonumber(redis.call('HGET', meta, 'o'))
local hasSince, sinceOffset, sinceEpoch = ARGV[4] == '1', tonumber(ARGV[5]), ARGV[6]
local limit, reverse, hasStream = tonumber(ARGV[7]), ARGV[8] == '1', ARGV[9] == '1'

if hasSince and (sinceEpoch ~= epoch or sinceOffset > top) then
  return {top, epoch, 1}
end
local out = {top, epoch, 0}
if not hasStream then
  return out
end
if limit == 0 then
  return out
end

local from, to = rangeEnds(hasSince, sinceOffset, reverse)
if not from then
  return out
end
for _, e in ipairs(readRange(stream, from, to, reverse, limit)) do
  local f = e[2]
  local key, data
  for i = 1, #f, 2 do
    if f[i] == 'k' then
      key = f[i + 1]
    elseif f[i] == 'd' then
      data = f[i + 1]
    end
  end
  if key and data then
    out[#out + 1] = key
    out[#out + 1] = data
  end
end
return out
