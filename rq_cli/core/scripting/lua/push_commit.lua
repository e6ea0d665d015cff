-- push_commit: the last command of one batch of a bulk push sent as a transaction
-- (rq_cli/core/pushing/bulk_tx.py): MULTI, SCRIPT LOAD <this script>, MSET of the items' data,
-- LPUSH (RPUSH: front) P:queue <id> ..., this script, EXEC. The ids were made at random by
-- the client (as push.lua's A_FRESH: no key can exist for them), v7 ids that carry the push
-- time A_STAMP_MS (rq_cli/core/contract/ages.py), so the plain commands write what push.lua would,
-- without a Lua value per item; this script does push.lua's checks and counting, in the
-- same transaction:
-- - a key of the wrong type (WRONGTYPE, from a plain command or found here): the batch is
--   undone (its data and line entries; nothing else can run in between) and the error
--   returned, as push.lua would return it before writing anything;
-- - A_STAMP_MS, the client's reading of the server's clock: if it is off by more than
--   PUSH_STAMP_SLACK_MS, the ids cannot tell the push time, so each item gets a P:enqueued
--   stamp of the server's own time (rare: a clock that drifted, a stream paused);
-- - the counters, and waking waiters on a fair queue (the items are untenanted: P:queue).
-- A_COUNT the items, A_FRONT "1" = RPUSH, A_STAMP_MS, A_IDS the ids joined (FRESH_ID_LEN
-- characters each: one argument, so the ids cost this script nothing unless it undoes them).
-- Returns "" (every item added), or the error reply of wrong_type().
-- the definitions of _common.lua and _fair.lua this script names (scripts.py checks):
--@uses NOW call_all count wake_waiters wrong_type
--@uses record_history
local n = tonumber(A_COUNT)
local function each_id()
  local ids = {}
  for i = 1, n do ids[i] = string.sub(A_IDS, (i - 1) * FRESH_ID_LEN + 1, i * FRESH_ID_LEN) end
  return ids
end
local bad = wrong_type()
if bad then
  -- undo: the plain commands that found a key of the right type did their part
  local ids = each_id()
  local keys = {}
  for i, id in ipairs(ids) do keys[i] = ITEM_KEY_PREFIX .. id end
  call_all('UNLINK', nil, keys)
  if redis.call('TYPE', K_QUEUE)['ok'] == 'list' then
    -- (this batch's ids are the n at the end it pushed to: nothing ran in between)
    if A_FRONT == '1' then
      redis.call('LTRIM', K_QUEUE, 0, -n - 1)
    else
      redis.call('LTRIM', K_QUEUE, n, -1)
    end
  end
  return bad
end
record_history(true)  -- this minute's history bucket (lua/_history.lua)
if math.abs(tonumber(A_STAMP_MS) - NOW) > PUSH_STAMP_SLACK_MS then
  local stamped, now = {}, tostring(NOW)
  for i, id in ipairs(each_id()) do
    stamped[2 * i - 1] = id
    stamped[2 * i] = now
  end
  call_all('HSET', K_ENQUEUED, stamped)
end
count(C_PUSHED, n)
wake_waiters(n)
return ''
