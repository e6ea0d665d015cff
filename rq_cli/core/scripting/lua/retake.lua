-- retake: a worker whose leases ran out while it could not reach the server (an outage, a
-- hung server) takes them back, as the same attempt, where nobody else has the item: the
-- item is live, still in processing, no session holds its lease, and P:holders still names
-- this worker's session (no one leased it since, and no cleaner put it back in line).
-- A_LEASE_MS lease ms   A_SESSION the worker's session
-- ARGV[REST], ... ids
-- Returns {code1, deadline1, ...}: E extended (taken back, or still held), X conflict
--   (another session holds it), L lost (back in line, or leased and let go by another
--   session since), M missing, Z dead.
-- the definitions of _common.lua and _fair.lua this script names (scripts.py checks):
--@uses NOW forget_suspect item_key lease_holder not_live set_lease wrong_type
do local bad = wrong_type(); if bad then return bad end end
local ms, session = tonumber(A_LEASE_MS), A_SESSION
local out = {}
for i = REST, #ARGV do
  local id = ARGV[i]
  if redis.call('EXISTS', item_key(id)) == 0 then
    out[#out + 1] = not_live(id); out[#out + 1] = 0
  else
    local holder = lease_holder(id)
    if holder and holder ~= session then
      out[#out + 1] = O_CONFLICT; out[#out + 1] = 0
    elseif holder or (redis.call('HGET', K_HOLDERS, id) == session
                      and redis.call('LPOS', K_PROCESSING, id, 'RANK', -1)) then
      set_lease(id, session, ms)
      forget_suspect(id)
      out[#out + 1] = O_EXTENDED; out[#out + 1] = NOW + ms
    else
      out[#out + 1] = O_LOST; out[#out + 1] = 0
    end
  end
end
return out
