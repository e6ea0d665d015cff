-- History from the operations (read after _common.lua: rq_cli/core/scripting/scripts.py, _common()).
--
-- Every script that changes the counters a history keeps (push, push_commit, lease,
-- complete, fail, reclaim, requeue_dead; clean snapshots in its own way) calls
-- record_history() once per call, after its type check: one ZCOUNT, whether this minute's
-- bucket of P:history holds a snapshot; only the first call of a minute (or a call on a
-- queue that has counted nothing yet) goes on to snapshot_history(). So a queue used only
-- by push, lease and complete has a history, with at most one bucket write a minute per
-- queue (per shard: each shard is a queue of its own, its histories summed when read) and
-- nothing per item. The snapshot is taken before the call's own changes, which fall in the
-- bucket it opens. `creates` (push): the call makes the queue, so a queue with no counters
-- yet starts its history at nothing counted, and its first push shows in it.
-- The history keys are not in these scripts' per-call type check (scripts.py _fixed_keys):
-- a P:history or P:history_hourly of another type (not this queue's) means no snapshot,
-- never an error in the operation.
local function record_history(creates)
  local minute = math.floor(NOW / 60000)
  -- (pcall: a foreign P:history gives an error table, not 0: no snapshot)
  if redis.pcall('ZCOUNT', K_HISTORY, minute, minute) ~= 0 then return end
  local hourly = redis.call('TYPE', K_HISTORY_HOURLY)['ok']
  if hourly ~= 'none' and hourly ~= 'zset' then return end
  if creates then redis.call('HSETNX', K_COUNTERS, C_PUSHED, 0) end
  snapshot_history()
end
