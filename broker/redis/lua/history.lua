-- Reads a stream: creates its meta if missing (so that subscribers learn
-- the epoch before the first publish), keeps the meta alive, checks the
-- requested position and returns live entries in the requested order.
--
-- KEYS[1] stream, KEYS[2] meta hash
-- ARGV[1] epoch to use if the stream has none
-- ARGV[2] meta TTL, milliseconds
-- ARGV[3] "1" when a since position is given
-- ARGV[4] since offset
-- ARGV[5] since epoch
-- ARGV[6] limit: 0 none, negative all, positive at most that many
-- ARGV[7] "1" for newest first
-- Returns {top offset, epoch, unrecoverable (0 or 1), offset, publication, offset, publication, ...}.
local stream, meta = KEYS[1], KEYS[2]
local metaTTL = tonumber(ARGV[2])
local hasSince, sinceOffset, sinceEpoch = ARGV[3] == '1', tonumber(ARGV[4]), ARGV[5]
local limit, reverse = tonumber(ARGV[6]), ARGV[7] == '1'

local epoch = redis.call('HGET', meta, 'e')
if not epoch then
  epoch = ARGV[1]
  redis.call('DEL', stream)
  local id = serverReplicationID()
  redis.call('HSET', meta, 'e', epoch, 'o', 0, 'r', id)
end
local top = tonumber(redis.call('HGET', meta, 'o')) or 0
if redis.call('PTTL', meta) < metaTTL then
  redis.call('PEXPIRE', meta, metaTTL)
end

if hasSince and (sinceEpoch ~= epoch or sinceOffset > top) then
  return {top, epoch, 1}
end
local out = {top, epoch, 0}
if limit == 0 then
  return out
end

-- Range ends. Since is exclusive: forward starts after it, reverse before.
local from, to = rangeEnds(hasSince, sinceOffset, reverse)
if not from then
  return out
end

local now = redis.call('TIME')
now = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local want = limit
-- Entries past their TTL are skipped; with a limit, read on until enough
-- live ones are found or the stream ends.
while true do
  local batch = readRange(stream, from, to, reverse, want)
  local live = 0
  for _, e in ipairs(batch) do
    local f = e[2]
    local data, expires
    for i = 1, #f, 2 do
      if f[i] == 'd' then
        data = f[i + 1]
      elseif f[i] == 'x' then
        expires = tonumber(f[i + 1])
      end
    end
    if data and expires and expires > now then
      out[#out + 1] = tonumber(string.match(e[1], '^(%d+)'))
      out[#out + 1] = data
      live = live + 1
    end
  end
  if want <= 0 or #batch < want or live == want then
    return out
  end
  want = want - live
  local last = '(' .. batch[#batch][1]
  if reverse then
    to = last
  else
    from = last
  end
end
