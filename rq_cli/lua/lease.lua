-- lease: take up to `count` items from the right of P:queue into P:processing, each with a
-- lease held by `session`; all in one step, so no id is ever in processing without a lease.
-- Due delayed items are promoted first. Ghost ids (no data) are dropped; a second copy of an
-- id whose lease is held is dropped; expired items and items that have used max_attempts
-- are dead-lettered.
-- ARGV[4] count   ARGV[5] lease ms   ARGV[6] session   ARGV[7] max_attempts (0 = unlimited)
-- ARGV[8] "1" = at most once: complete each item as it is taken (its data is returned and
--         the item deleted in the same step; a worker that dies loses the job, by request)
-- ARGV[9], ARGV[10], ... pairs id, session: items to complete first, in the same step (a
--         worker's loop: finish the last item, take the next, in one round trip)
-- Returns {status, lease_deadline_ms, next_due_ms, completions, id1, data1, attempt1, id2, ...}
--   status: 0 ok (possibly no items), 1 paused. next_due_ms: earliest delayed item, or -1.
--   completions: one character per item completed first, as complete.lua returns them.
do local bad = wrong_type(); if bad then return bad end end
local completions = {}
for i = 9, #ARGV, 2 do
  completions[#completions + 1] = complete_one(ARGV[i], ARGV[i + 1])
end
completions = table.concat(completions)
if redis.call('EXISTS', K_PAUSED) == 1 then return {1, 0, -1, completions} end
local want = tonumber(ARGV[4])
local ms = tonumber(ARGV[5])
local session = ARGV[6]
local max_attempts = tonumber(ARGV[7])
local at_most_once = ARGV[8] == '1'
promote_due(1000)
local out = {0, NOW + ms, -1, completions}
local taken = 0
local budget = want + 1000 -- bounded: at most this many ids looked at per call
while taken < want and budget > 0 do
  budget = budget - 1
  local id = redis.call('RPOP', K_QUEUE)
  if not id then break end
  local data = redis.call('GET', item_key(id))
  if not data then
    drop_meta(id)
  elseif lease_holder(id) then
    -- An item someone holds: normally a second copy, its first being in processing. If it
    -- is not there (a peer cleaner re-queued it between the holder's two lease steps), it
    -- goes there now, still the holder's, so the holder can complete it. (Rare; LPOS O(N).)
    if not redis.call('LPOS', K_PROCESSING, id) then redis.call('LPUSH', K_PROCESSING, id) end
  else
    local exp = tonumber(redis.call('ZSCORE', K_EXPIRES, id))
    if exp and exp <= NOW then
      dead_letter(id, 'expired')
    elseif exhausted(id, max_attempts) then
      dead_letter(id, 'max_attempts')
    elseif at_most_once then
      local attempt = (tonumber(redis.call('HGET', K_ATTEMPTS, id)) or 0) + 1
      redis.call('DEL', item_key(id))
      drop_meta(id)
      count('completed', 1)
      taken = taken + 1
      out[#out + 1] = id
      out[#out + 1] = data
      out[#out + 1] = attempt
    else
      local attempt = redis.call('HINCRBY', K_ATTEMPTS, id, 1)
      redis.call('LPUSH', K_PROCESSING, id)
      set_lease(id, session, ms)
      forget_suspect(id)
      taken = taken + 1
      out[#out + 1] = id
      out[#out + 1] = data
      out[#out + 1] = attempt
    end
  end
end
count('leased', taken)
if taken == 0 then
  local first = redis.call('ZRANGE', K_DELAYED, 0, 0, 'WITHSCORES')
  if first[2] then out[3] = tonumber(first[2]) end
end
return out
