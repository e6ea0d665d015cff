-- extend: push lease deadlines out, only while the lease exists (and, given a session, only
-- if that session holds it).
-- A_LEASE_MS lease ms   ARGV[REST], ARGV[REST + 1], ... pairs id, session ("" = any)
-- Returns {code1, deadline1, ...}: E extended, L lost (the lease has expired), X conflict,
--   M missing, Z dead (not live: dead-lettered), N not leased (a live item never leased).
-- the definitions of _common.lua and _fair.lua this script names (scripts.py checks):
--@uses NOW held_by_other item_key lease_holder never_leased not_live set_lease wrong_type
--@uses attempts_of
do local bad = wrong_type(); if bad then return bad end end
local ms = tonumber(A_LEASE_MS)
local out = {}
for i = REST, #ARGV, 2 do
  local id, session = ARGV[i], ARGV[i + 1]
  if redis.call('EXISTS', item_key(id)) == 0 then
    out[#out + 1] = not_live(id); out[#out + 1] = 0
  else
    local holder = lease_holder(id)
    if not holder and attempts_of(id) == 0 and never_leased(id) then
      out[#out + 1] = O_NOT_LEASED; out[#out + 1] = 0
    elseif not holder then
      out[#out + 1] = O_LOST; out[#out + 1] = 0
    elseif held_by_other(id, session) then
      out[#out + 1] = O_CONFLICT; out[#out + 1] = 0
    else
      set_lease(id, holder, ms)
      out[#out + 1] = O_EXTENDED; out[#out + 1] = NOW + ms
    end
  end
end
return out
