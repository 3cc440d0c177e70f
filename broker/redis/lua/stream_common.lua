-- Stream continuity across a change of master. Redis replicates
-- asynchronously: a replica promoted by Sentinel or a Cluster failover may
-- lack the last publications the old master acknowledged (and sent to
-- subscribers), and would hand out their offsets again in the same epoch.
-- A promotion gives the new master a new replication id, so the meta keeps
-- the id of the master that last wrote it ('r'), and a stream found
-- written under another id starts a new epoch: offsets already handed out
-- are never reused in one epoch, and recovery across the change is
-- refused rather than claimed.
--
-- continueStream returns the stream's epoch, the new one (newEpoch) when
-- the meta was written by another master. A meta without 'r' (written
-- before this check existed) adopts this master's id and keeps its epoch.
local function replicationID()
  local info = redis.call('INFO', 'replication')
  return string.match(info, 'master_replid:(%w+)') or ''
end

local function continueStream(meta, epoch, writtenBy, newEpoch)
  local rid = replicationID()
  if writtenBy == rid then
    return epoch
  end
  if writtenBy then
    epoch = newEpoch
    redis.call('HSET', meta, 'e', epoch, 'r', rid)
  else
    redis.call('HSET', meta, 'r', rid)
  end
  return epoch
end
