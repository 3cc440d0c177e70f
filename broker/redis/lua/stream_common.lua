-- Shared by the stream scripts (publish.lua, history.lua) and the map
-- scripts (map_*.lua), which come after it: stream continuity across a
-- change of master, and helpers for protobuf varints and stream ranges.
--
-- Stream continuity across a change of master. Redis replicates
-- asynchronously: a replica promoted by Sentinel or a Cluster failover may
-- lack the last publications the old master acknowledged (and sent to
-- subscribers), and would hand out their offsets again in the same epoch;
-- so may a server restarted from a snapshot. A promotion or a restart
-- gives the server a new replication id, so the meta keeps the id of the
-- master that last wrote it ('r'), and a publish that finds it written
-- under another id starts a new epoch (unless the server only restarted
-- and restarts lose nothing, see continueStream): offsets already handed
-- out are never reused in one epoch, and recovery across the change is
-- refused rather than claimed.
--
-- Reads need no check: a stream this master has not written yet is what
-- the old one had up to some point, so whatever it returns is what the
-- old master returned for the same positions. A read that creates the
-- meta records the id, though: a publish on this master may use the
-- epoch, be lost in a failover, and the next master must not take the
-- stream for its own.
--
-- Reading the id (INFO) costs more than the rest of a publish's reads
-- together, so it is read once per pipeline: the caller marks the first
-- call of a pipeline on each key base, which reads INFO and keeps the id
-- in the base's replid key with a token of the pipeline; the calls after
-- it, on the same connection and so on the same server, trust the key
-- only with their pipeline's token. A value another pipeline wrote, or one
-- that replication or a snapshot brought from another server, does not
-- carry the token, and the call reads INFO itself. In a cluster, where a
-- single call may be redirected to another server, every call reads INFO.

-- serverReplicationID reads this server's replication id from INFO, and
-- whether the server was promoted from replica since it started: a
-- promotion keeps the previous id as master_replid2, a start clears it.
local function serverReplicationID()
  local info = redis.call('INFO', 'replication')
  -- Plain finds: a pattern scan of the whole text costs as much as INFO.
  local function field(name)
    local _, e = string.find(info, name, 1, true)
    if not e then
      return ''
    end
    return string.sub(info, e + 1, e + 40) -- ids are 40 hex digits
  end
  local before = field('master_replid2:')
  return field('master_replid:'), before ~= '' and before ~= string.rep('0', 40)
end

-- replicationID returns this server's replication id and whether it was
-- promoted (see serverReplicationID). how is "o" for the only call of its
-- pipeline on this key base (INFO), "i:<token>" for the first of several
-- (INFO, then the key is set to "<token>:<id>:<0|1>"), "k:<token>" for the
-- calls after it (the key, when it carries the token; else INFO).
local function replicationID(how, idKey, ttl)
  local mode, token = string.sub(how, 1, 1), string.sub(how, 3)
  if mode == 'o' then
    return serverReplicationID()
  end
  if mode == 'k' then
    local v = redis.call('GET', idKey)
    local n = #token
    -- "<token>:<40-digit id>:<0|1>", read without a pattern.
    if v and #v == n + 43 and string.sub(v, 1, n + 1) == token .. ':' then
      return string.sub(v, n + 2, n + 41), string.sub(v, -1) == '1'
    end
  end
  local id, promoted = serverReplicationID()
  local flag = '0'
  if promoted then
    flag = '1'
  end
  redis.call('SET', idKey, token .. ':' .. id .. ':' .. flag, 'PX', ttl)
  return id, promoted
end

-- continueStream returns the stream's epoch, the new one (newEpoch) when
-- the meta was written under another id (writtenBy is not rid) and this
-- server may lack writes: it was promoted from replica, or it restarted
-- and restarts may lose writes (durable false). A server that restarted
-- with every write synced to disk (durable: appendonly with appendfsync
-- always), or that received the stream by slot migration, keeps the
-- epoch. A meta without 'r' (written before this check existed) adopts
-- this server's id and keeps its epoch.
local function continueStream(meta, epoch, writtenBy, rid, promoted, durable, newEpoch)
  if writtenBy == rid then
    return epoch
  end
  if writtenBy and (promoted or not durable) then
    epoch = newEpoch
    redis.call('HSET', meta, 'e', epoch, 'r', rid)
  else
    redis.call('HSET', meta, 'r', rid)
  end
  return epoch
end

-- varint encodes n as a protobuf base-128 varint; Lua numbers are exact
-- up to 2^53, far beyond any offset or time.
local function varint(n)
  -- Without a table for what most are: lengths and offsets below 2^21.
  if n < 128 then
    return string.char(n)
  elseif n < 16384 then
    return string.char(n % 128 + 128, math.floor(n / 128))
  elseif n < 2097152 then
    return string.char(n % 128 + 128, math.floor(n / 128) % 128 + 128, math.floor(n / 16384))
  end
  local out = {}
  while n >= 128 do
    out[#out + 1] = string.char(n % 128 + 128)
    n = math.floor(n / 128)
  end
  out[#out + 1] = string.char(n)
  return table.concat(out)
end

-- deltaFields are the fields 5 (delta) and 6 (prev) of a pub/sub
-- Message for delta subscribers: none without delta, prev when there is
-- one.
local function deltaFields(delta, prev)
  if not delta then
    return ''
  end
  if prev then
    return '\40\1\50' .. varint(#prev) .. prev
  end
  return '\40\1'
end

-- rangeEnds returns the stream IDs between which a read from a since
-- position goes (since is exclusive: forward starts after it, reverse
-- before it), or nil when nothing comes before it.
local function rangeEnds(hasSince, sinceOffset, reverse)
  local from, to = '-', '+'
  if hasSince then
    if reverse then
      if sinceOffset <= 1 then
        return nil
      end
      to = (sinceOffset - 1) .. '-0'
    else
      from = (sinceOffset + 1) .. '-0'
    end
  end
  return from, to
end

-- readRange returns at most count entries (all when count is not
-- positive) between from and to, newest first when reverse.
local function readRange(stream, from, to, reverse, count)
  if reverse then
    if count > 0 then
      return redis.call('XREVRANGE', stream, to, from, 'COUNT', count)
    end
    return redis.call('XREVRANGE', stream, to, from)
  end
  if count > 0 then
    return redis.call('XRANGE', stream, from, to, 'COUNT', count)
  end
  return redis.call('XRANGE', stream, from, to)
end
