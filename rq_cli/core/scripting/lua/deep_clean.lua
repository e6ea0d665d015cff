-- deep clean, confirm step: the caller found these ids by SCAN of P:item:* and saw them in
-- none of the lists or sets. Each is checked again here, atomically: only an item that
-- still exists, has no lease and is not delayed counts as stray; it is re-queued (or
-- dead-lettered at max_attempts) once it has been seen stray for the grace period.
-- A_GRACE_MS grace ms   A_MAX_ATTEMPTS max_attempts   A_FRONT "1" = front   A_DRY_RUN "1" = dry run
-- ARGV[REST], ... ids
-- Returns {recovered, dead, suspects}
-- the definitions of _common.lua and _fair.lua this script names (scripts.py checks):
--@uses NOW count dead_letter enqueue exhausted item_key lease_holder wrong_type
do local bad = wrong_type(); if bad then return bad end end
local grace = tonumber(A_GRACE_MS)
local max_attempts = tonumber(A_MAX_ATTEMPTS)
local front = A_FRONT == '1'
local dry = A_DRY_RUN == '1'
local recovered, dead, suspects = 0, 0, 0
for i = REST, #ARGV do
  local id = ARGV[i]
  if redis.call('EXISTS', item_key(id)) == 0 or lease_holder(id)
      or redis.call('ZSCORE', K_DELAYED, id) then
    if not dry then redis.call('HDEL', K_SUSPECTS, SEEN_STRAY .. id) end  -- not (or no longer) stray
  else
    local field = SEEN_STRAY .. id
    local first = tonumber(redis.call('HGET', K_SUSPECTS, field))
    if not first then
      first = NOW
      if not dry then redis.call('HSET', K_SUSPECTS, field, NOW) end
    end
    if NOW - first < grace then
      suspects = suspects + 1
    elseif exhausted(id, max_attempts) then
      if not dry then dead_letter(id, R_MAX_ATTEMPTS) end
      dead = dead + 1
    else
      if not dry then
        redis.call('HDEL', K_SUSPECTS, field)
        enqueue(id, front)
      end
      recovered = recovered + 1
    end
  end
end
if not dry then count(C_CLEANED, recovered) end
return {recovered, dead, suspects}
