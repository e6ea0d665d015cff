-- deep clean, prune step: drop rq-cli's bookkeeping (attempts, enqueued, errors, expires,
-- suspects, leases) and the P:delayed entry of ids whose item no longer exists, for example
-- items completed by a peer client, which knows nothing of these keys (a v0.3 peer's deep
-- clean hands out a delayed item at once: its id stays in P:delayed, a ghost). The caller
-- leaves out dead ids (their data is P:dead_item:<id>).
-- A_DRY_RUN "1" = dry run
-- A_WHAT "meta": drop all bookkeeping of ids whose item is gone;
--         "strays": forget stray sightings ("d:<id>") of ids deep clean no longer sees stray
-- ARGV[REST], ... ids
-- Returns the number of ids pruned ("meta") or sightings forgotten ("strays").
-- the definitions of _common.lua and _fair.lua this script names (scripts.py checks):
--@uses drop_meta item_key wrong_type
do local bad = wrong_type(); if bad then return bad end end
local dry = A_DRY_RUN == '1'
local pruned = 0
for i = REST, #ARGV do
  local id = ARGV[i]
  if A_WHAT == 'strays' then
    if not dry then pruned = pruned + redis.call('HDEL', K_SUSPECTS, SEEN_STRAY .. id) end
  elseif redis.call('EXISTS', item_key(id)) == 0 then
    if not dry then
      drop_meta(id)
      redis.call('ZREM', K_DELAYED, id)
    end
    pruned = pruned + 1
  end
end
return pruned
