-- release: a worker that is told to stop at once gives items back that it leased and did not
-- finish: each goes back in line at once (the front: it was next), its lease is dropped and
-- the attempt it was leased with is given back. Not a failure: nothing is counted, no error
-- is kept.
-- A_SESSION the worker's session
-- ARGV[REST], ... ids
-- Returns a string of one code per id: R returned, X conflict (another session holds it),
--   L lost (not held by this session any more: left alone), M missing, Z dead.
-- the definitions of _common.lua and _fair.lua this script names (scripts.py checks):
--@uses del_lease enqueue forget_suspect item_key lease_holder not_live wrong_type
--@uses near_end
do local bad = wrong_type(); if bad then return bad end end
local session = A_SESSION
local out = {}
for i = REST, #ARGV do
  local id = ARGV[i]
  if redis.call('EXISTS', item_key(id)) == 0 then
    out[#out + 1] = not_live(id)
  else
    local holder = lease_holder(id)
    -- (processing searched from the end the id is likely near, as unlist does: the newest
    -- leases of a long list cost what the oldest do)
    local from = '-1'
    if (not holder or holder == session) and redis.call('LLEN', K_PROCESSING) > UNLIST_SHORT then
      from = near_end(id)
    end
    if holder and holder ~= session then
      out[#out + 1] = O_CONFLICT
    elseif holder or (redis.call('HGET', K_HOLDERS, id) == session
                      and redis.call('LPOS', K_PROCESSING, id, 'RANK', tonumber(from))) then
      redis.call('LREM', K_PROCESSING, from, id)
      del_lease(id)
      forget_suspect(id)
      if (tonumber(redis.call('HGET', K_ATTEMPTS, id)) or 0) > 0 then
        redis.call('HINCRBY', K_ATTEMPTS, id, -1)
      end
      enqueue(id, true)
      out[#out + 1] = O_RETURNED
    else
      out[#out + 1] = O_LOST
    end
  end
end
return table.concat(out)
