-- deep clean, prune step: drop rq-cli's bookkeeping (attempts, enqueued, errors, expires,
-- suspects, leases) of ids whose item no longer exists, for example items completed by a
-- peer client, which knows nothing of these keys.
-- ARGV[4] "1" = dry run   ARGV[5], ... ids found in the bookkeeping but not by SCAN
-- Returns the number of ids pruned.
local dry = ARGV[4] == '1'
local pruned = 0
for i = 5, #ARGV do
  local id = ARGV[i]
  local item = id
  if string.sub(id, 1, 2) == 'c:' and redis.call('HEXISTS', K_SUSPECTS, id) == 1 then
    item = string.sub(id, 3)
  end
  if redis.call('EXISTS', item_key(item)) == 0 then
    if not dry then
      drop_meta(id)
      if item ~= id then redis.call('HDEL', K_SUSPECTS, id) end
    end
    pruned = pruned + 1
  end
end
return pruned
