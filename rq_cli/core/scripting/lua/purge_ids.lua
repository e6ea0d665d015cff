-- purge_ids: delete the named items of one state, each only if it is still in that state
-- (filtered purge: an earlier peek read the ids and the filter chose them; an id that has
-- moved on since is left alone, so a re-run never deletes anything twice).
-- A_STATE state: pending | processing | delayed | dead
-- A_LOW, A_HIGH lists: the lowest and highest index (from the left, LRANGE's) at which the
--   ids were read; the ids are looked for in that window widened by PURGE_SLACK each side
--   (other clients' pushes and completions shift them meanwhile), never in the whole list
-- ARGV[REST..] ids
-- fair: KEYS[2], if given, is the tenant sub-queue the pending ids were read from; a
-- sub-queue emptied here leaves the ring of tenants with work.
-- Returns the ids deleted.
-- the definitions of _common.lua and _fair.lua this script names (scripts.py checks):
--@uses KEY_TENANT dead_item_key del_lease drop_metas item_key lease_holder tenant_removed
--@uses wrong_type batch_move
do local bad = wrong_type(); if bad then return bad end end
local PURGE_SLACK = 1000
local state = A_STATE
local out = {}
if state == S_PENDING or state == S_PROCESSING then
  local key = state == S_PENDING and (KEYS[2] or K_QUEUE) or K_PROCESSING
  local wanted = {}
  for i = REST, #ARGV do wanted[ARGV[i]] = true end
  local lo = math.max(tonumber(A_LOW) - PURGE_SLACK, 0)
  local window = redis.call('LRANGE', key, lo, tonumber(A_HIGH) + PURGE_SLACK)
  -- found ids are overwritten with a marker (LSET), then all markers go in one LREM from
  -- the nearer end: one pass over the list per call instead of one per id
  local marker = '\0rq-cli:purged\0'
  for i, id in ipairs(window) do
    -- (pending: a second copy of an id someone holds is not pending: keep it, as purge does)
    if wanted[id] and (state == S_PROCESSING or not lease_holder(id)) then
      wanted[id] = nil
      redis.call('LSET', key, lo + i - 1, marker)
      out[#out + 1] = id
    end
  end
  if #out > 0 then
    local near_left = lo < redis.call('LLEN', key) / 2
    redis.call('LREM', key, near_left and #out or -#out, marker)
    for _, id in ipairs(out) do
      redis.call('UNLINK', item_key(id))
      if state == S_PROCESSING then del_lease(id) end
    end
    batch_move(out, '') -- (a purged item leaves its batch)
    drop_metas(out)
    if state == S_PENDING and KEY_TENANT then tenant_removed(KEY_TENANT, key, #out) end
  end
elseif state == S_DELAYED then
  for i = REST, #ARGV do
    if redis.call('ZREM', K_DELAYED, ARGV[i]) == 1 then
      redis.call('UNLINK', item_key(ARGV[i]))
      out[#out + 1] = ARGV[i]
    end
  end
  batch_move(out, '')
  drop_metas(out)
elseif state == S_DEAD then
  for i = REST, #ARGV do
    if redis.call('ZREM', K_DEAD, ARGV[i]) == 1 then
      redis.call('UNLINK', dead_item_key(ARGV[i]))
      redis.call('HDEL', K_DEAD_INFO, ARGV[i])
      out[#out + 1] = ARGV[i]
    end
  end
  batch_move(out, '')
end
return out
