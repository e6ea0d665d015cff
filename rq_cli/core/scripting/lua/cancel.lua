-- cancel: dead-letter items now with reason "cancelled", whoever holds the lease (a worker
-- running one finds it dead at its next heartbeat: extend says already_dead).
-- A_ERROR error text ("" = none)   ARGV[REST], ARGV[REST + 1], ... ids
-- Returns a string, one character per id: D dead-lettered, M missing, Z already dead.
-- the definitions of _common.lua and _fair.lua this script names (scripts.py checks):
--@uses dead_letter item_key not_live unlist wrong_type
do local bad = wrong_type(); if bad then return bad end end
local err = A_ERROR
local out = {}
for i = REST, #ARGV do
  local id = ARGV[i]
  if redis.call('EXISTS', item_key(id)) == 0 then
    out[#out + 1] = not_live(id)
  else
    unlist(id)
    if err ~= '' then redis.call('HSET', K_ERRORS, id, err) end
    dead_letter(id, R_CANCELLED, err ~= '' and err or nil)
    out[#out + 1] = O_DEAD
  end
end
return table.concat(out)
