-- requeue-dead: move dead items back to a queue (this one, or another with prefix T on the
-- same server; on a cluster T must share this queue's hash tag).
-- A_TARGET target prefix T   A_DRY_RUN "1" = dry run
-- A_MODE mode: "ids" (ARGV[REST..] are ids), "range" (the oldest dead, by time of death) or
--   "moved" (ARGV[REST..] are pairs id, "=" .. data or "-": items the client already pushed
--   into a queue in another slot, core/operations/crossmove.py; each dead copy that still holds that
--   data is dropped and counted requeued, any other id is missing; A_TARGET is unused)
-- ARGV[REST] range: latest time of death (ms) to take   ARGV[REST + 1] range: batch size
-- ARGV[REST + 2] range: offset (dead items skipped by earlier calls)
-- Returns {requeued, skipped, missing, id1, id2, ...}: the requeued ids, then the skipped
-- ids (the last `skipped` of them).
-- skipped: an item with that id is live again in the target (a peer pushed it again); it
-- stays dead.
-- the definitions of _common.lua and _fair.lua this script names (scripts.py checks):
--@uses NOW count dead_item_key dead_tenant enqueue wake_waiters wrong_type batch_move
--@uses record_history
do local bad = wrong_type(); if bad then return bad end end
record_history()  -- this minute's history bucket (lua/_history.lua)
local target = A_TARGET
local dry = A_DRY_RUN == '1'
local out, skipped = {0, 0, 0}, {}
if A_MODE == 'moved' then
  for i = REST, #ARGV, 2 do
    local id, pushed = ARGV[i], ARGV[i + 1]
    local data = redis.call('GET', dead_item_key(id))
    if data and string.sub(pushed, 1, 1) == '=' and data == string.sub(pushed, 2) then
      out[1] = out[1] + 1
      out[#out + 1] = id
      if not dry then
        redis.call('DEL', dead_item_key(id))
        redis.call('ZREM', K_DEAD, id)
        redis.call('HDEL', K_DEAD_INFO, id)
      end
    else
      out[3] = out[3] + 1
      if not data and not dry and redis.call('ZREM', K_DEAD, id) == 1 then
        redis.call('HDEL', K_DEAD_INFO, id)
      end
    end
  end
  if not dry then count(C_REQUEUED, out[1]) end
  return out
end
local ids
if A_MODE == 'range' then
  ids = redis.call('ZRANGEBYSCORE', K_DEAD, '-inf', ARGV[REST], 'LIMIT', ARGV[REST + 2],
    ARGV[REST + 1])
else
  ids = {}
  for i = REST, #ARGV do ids[#ids + 1] = ARGV[i] end
end
for _, id in ipairs(ids) do
  local data = redis.call('GET', dead_item_key(id))
  local target_item = item_key_in(target, id)
  if not data then
    out[3] = out[3] + 1
    if not dry and redis.call('ZREM', K_DEAD, id) == 1 then redis.call('HDEL', K_DEAD_INFO, id) end
  elseif redis.call('EXISTS', target_item) == 1 then
    out[2] = out[2] + 1
    skipped[#skipped + 1] = id
  else
    out[1] = out[1] + 1
    out[#out + 1] = id
    if not dry then
      redis.call('SET', target_item, data)
      -- fair: back to its tenant's sub-queue (in this queue; another queue gets it untenanted)
      local tenant = target == PREFIX and dead_tenant(id)
      if tenant then
        redis.call('HSET', K_ITEM_TENANT, id, tenant)
        enqueue(id)
      else
        redis.call('LPUSH', key_in(target, 'queue'), id)
        if target == PREFIX then wake_waiters(1) end
      end
      batch_move({id}, target == PREFIX and S_PENDING or '') -- (another queue: out of its batch)
      redis.call('HSET', key_in(target, 'enqueued'), id, NOW)
      redis.call('HDEL', key_in(target, 'attempts'), id)
      redis.call('DEL', dead_item_key(id))
      redis.call('ZREM', K_DEAD, id)
      redis.call('HDEL', K_DEAD_INFO, id)
    end
  end
end
if not dry then count(C_REQUEUED, out[1]) end
for _, id in ipairs(skipped) do out[#out + 1] = id end
return out
