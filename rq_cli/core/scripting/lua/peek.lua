-- peek: read up to `count` items of one state, changing nothing. Read-only.
-- A_STATE state: pending | processing | delayed | dead   A_OFFSET offset   A_COUNT count
-- A_FROM from: "head" (next to be leased; oldest lease; soonest due; oldest death) | "tail"
-- A_START_AT optional ("" = none), delayed/dead: begin at this member while it is still in
--   the set (a cursor that stays put while members before it leave); else, or when it has
--   left, at the offset
-- Returns a flat list: per item, the fields of specs.py _PEEKED (SPECS['peek'].rows), in
--   that order (the one list of them, explained there).
-- the definitions of _common.lua and _fair.lua this script names (scripts.py checks):
--@uses NOW dead_item_key item_key lease_holder lease_pttl put_item_fields
--@uses attempts_of
local state, offset, n, head = A_STATE, tonumber(A_OFFSET), tonumber(A_COUNT), A_FROM == 'head'
local ids, scores = {}, {}
if state == S_PENDING or state == S_PROCESSING then
  -- (fair: KEYS[2], if given, is the tenant's sub-queue to read instead of P:queue)
  local key = state == S_PENDING and (KEYS[2] or K_QUEUE) or K_PROCESSING
  if head then
    local got = redis.call('LRANGE', key, -(offset + n), -(offset + 1))
    for i = #got, 1, -1 do ids[#ids + 1] = got[i] end
  else
    ids = redis.call('LRANGE', key, offset, offset + n - 1)
  end
else
  local key = state == S_DELAYED and K_DELAYED or K_DEAD
  local cmd = head and 'ZRANGE' or 'ZREVRANGE'
  if A_START_AT ~= '' then
    offset = redis.call(head and 'ZRANK' or 'ZREVRANK', key, A_START_AT) or offset
  end
  local got = redis.call(cmd, key, offset, offset + n - 1, 'WITHSCORES')
  for i = 1, #got, 2 do
    ids[#ids + 1] = got[i]
    scores[#scores + 1] = got[i + 1]
  end
end
local out = {}
for i, id in ipairs(ids) do
  local data, info = false, false
  if state == S_DEAD then
    data = redis.call('GET', dead_item_key(id))
    info = redis.call('HGET', K_DEAD_INFO, id)
  else
    data = redis.call('GET', item_key(id))
  end
  local holder, deadline, abandoned = false, -1, 0
  if state == S_PROCESSING then
    holder = lease_holder(id)
    -- the deadline rq-cli set (P:leases), exact; else from the key's TTL (a peer's lease)
    local at = holder and tonumber(redis.call('ZSCORE', K_LEASES, id))
    if at then
      deadline = at
    else
      local ttl = lease_pttl(id)
      if ttl >= 0 then deadline = NOW + ttl end
    end
    if not holder and data then
      -- abandoned: the lease ran out. Its last holder and deadline are still kept (P:holders,
      -- P:leases) until the item is completed, failed or put back in line.
      abandoned = 1
      holder = redis.call('HGET', K_HOLDERS, id)
      deadline = tonumber(redis.call('ZSCORE', K_LEASES, id)) or -1
    end
  end
  -- (a dead item's bookkeeping went when it died: its attempts and fields are in dead_info)
  local live = state ~= S_DEAD
  out[#out + 1] = id
  out[#out + 1] = data
  out[#out + 1] = live and attempts_of(id) or 0
  out[#out + 1] = holder
  out[#out + 1] = deadline
  out[#out + 1] = scores[i] or -1
  out[#out + 1] = info
  out[#out + 1] = abandoned
  put_item_fields(out, id, live) -- (fields.py: enqueued_at, error, tenant, ...)
end
return out
