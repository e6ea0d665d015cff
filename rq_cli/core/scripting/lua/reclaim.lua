-- reclaim: a named worker, restarted, takes back the items its previous run held, as new
-- attempts, without waiting for their leases to run out.
-- A_LEASE_MS lease ms   A_SESSION the new session
-- ARGV[REST], ARGV[REST + 1], ... pairs id, old session (the holder P:holders named)
-- An item is taken when it is live, its last holder is still the old session, and either the
-- old session still holds the lease or the lease ran out and it is still in processing (not
-- yet put back in line by a cleaner: then it is leased the usual way).
-- Returns {lease_deadline_ms, id1, data1, attempt1, then item 1's lease fields (fields.py:
--   SPECS['reclaim'].rows), id2, ...}
-- the definitions of _common.lua and _fair.lua this script names (scripts.py checks):
--@uses NOW count forget_suspect item_key lease_holder put_lease_fields_of set_lease
--@uses attempts_of
--@uses wrong_type
--@uses record_history
do local bad = wrong_type(); if bad then return bad end end
record_history()  -- this minute's history bucket (lua/_history.lua)
local ms, session = tonumber(A_LEASE_MS), A_SESSION
local out = {NOW + ms}
local taken = 0
for i = REST, #ARGV, 2 do
  local id, old = ARGV[i], ARGV[i + 1]
  local data = redis.call('GET', item_key(id))
  if data and redis.call('HGET', K_HOLDERS, id) == old then
    local holder = lease_holder(id)
    if holder == old or (not holder and redis.call('LPOS', K_PROCESSING, id, 'RANK', -1)) then
      local attempt = attempts_of(id) + 1 -- (before set_lease names the new holder)
      redis.call('HSET', K_ATTEMPTS, id, attempt)
      set_lease(id, session, ms)
      forget_suspect(id)
      taken = taken + 1
      out[#out + 1] = id
      out[#out + 1] = data
      out[#out + 1] = attempt
      put_lease_fields_of(out, id)
    end
  end
end
count(C_LEASED, taken)
return out
