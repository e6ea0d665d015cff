-- purge, one bounded step: delete up to `batch` items of one state (UNLINK: memory is freed
-- off the main thread).
-- A_STATE state: pending | processing | delayed | dead | strays | meta
-- A_BATCH batch size   ARGV[REST..] (strays) ids whose item keys SCAN found
-- Returns how many entries this step removed (0 = that state is empty).
-- the definitions of _common.lua and _fair.lua this script names (scripts.py checks):
--@uses dead_item_key del_lease drop_meta item_key lease_holder take_pending wrong_type
--@uses batch_move
do local bad = wrong_type(); if bad then return bad end end
local state = A_STATE
local batch = tonumber(A_BATCH)
local n = 0
if state == S_PENDING then
  local ids = take_pending(batch) -- (fair: P:queue, then the tenants' sub-queues)
  if not ids then return 0 end
  for _, id in ipairs(ids) do
    -- a second copy of an id someone holds: the leased item is not pending, keep it
    if not lease_holder(id) then
      batch_move({id}, '') -- (a purged item leaves its batch)
      redis.call('UNLINK', item_key(id))
      drop_meta(id)
    end
  end
  n = #ids
elseif state == S_PROCESSING then
  local ids = redis.call('RPOP', K_PROCESSING, batch)
  if not ids then return 0 end
  batch_move(ids, '')
  for _, id in ipairs(ids) do
    redis.call('UNLINK', item_key(id))
    del_lease(id)
    drop_meta(id)
  end
  n = #ids
elseif state == S_DELAYED then
  local popped = redis.call('ZPOPMIN', K_DELAYED, batch)
  for i = 1, #popped, 2 do
    batch_move({popped[i]}, '')
    redis.call('UNLINK', item_key(popped[i]))
    drop_meta(popped[i])
  end
  n = #popped / 2
elseif state == S_DEAD then
  local popped = redis.call('ZPOPMIN', K_DEAD, batch)
  for i = 1, #popped, 2 do
    batch_move({popped[i]}, '')
    redis.call('UNLINK', dead_item_key(popped[i]))
    redis.call('HDEL', K_DEAD_INFO, popped[i])
  end
  n = #popped / 2
elseif state == 'strays' then
  for i = REST, #ARGV do
    n = n + redis.call('UNLINK', item_key(ARGV[i]))
    del_lease(ARGV[i])
  end
elseif state == 'meta' then
  -- the bookkeeping hashes and sets, whole: UNLINK frees big ones in the background
  -- (every fixed key but the four that hold ids, from keys.py FIXED_KEYS)
  n = redis.call('UNLINK', unpack(UNLINKED_WHOLE))
end
return n
