-- item: one item by id, in whatever state it is. Read-only.
-- A_ID the id
-- Returns {} when the id is neither live nor dead, else {state, then the fields of scripts.py
-- _PEEKED (SPECS['item'].rows) as peek.lua returns them}.
-- The state is found in O(1) or O(log N) reads, except for a live item that is neither
-- delayed nor leased: it is in processing (an abandoned lease: LPOS over processing, which
-- holds only the items in flight) or else pending (the queue itself is not searched: it may
-- be millions long).
-- the definitions of _common.lua and _fair.lua this script names (scripts.py checks):
--@uses NOW dead_item_key item_key lease_holder lease_pttl put_item_fields
--@uses attempts_of
local id = A_ID
local data = redis.call('GET', item_key(id))
local state, score, info, holder, deadline, abandoned = false, -1, false, false, -1, 0
if not data then
  local died = redis.call('ZSCORE', K_DEAD, id)
  if not died then return {} end
  state, score = S_DEAD, died
  data = redis.call('GET', dead_item_key(id))
  info = redis.call('HGET', K_DEAD_INFO, id)
else
  local due = redis.call('ZSCORE', K_DELAYED, id)
  if due then
    state, score = S_DELAYED, due
  else
    holder = lease_holder(id)
    if holder then
      state = S_PROCESSING
      local at = tonumber(redis.call('ZSCORE', K_LEASES, id))
      if at and redis.call('HGET', K_HOLDERS, id) == holder then
        deadline = at
      else
        local ttl = lease_pttl(id)
        if ttl >= 0 then deadline = NOW + ttl end
      end
    elseif redis.call('LPOS', K_PROCESSING, id, 'RANK', -1) then
      state, abandoned = S_PROCESSING, 1
      holder = redis.call('HGET', K_HOLDERS, id)
      deadline = tonumber(redis.call('ZSCORE', K_LEASES, id)) or -1
    else
      state = S_PENDING
    end
  end
end
local out = {
  state, id, data,
  state ~= S_DEAD and attempts_of(id) or 0,
  holder, deadline, score, info, abandoned,
}
put_item_fields(out, id, state ~= S_DEAD) -- (a dead item's are in dead_info)
return out
