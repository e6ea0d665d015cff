-- fail: release each item's lease; dead-letter it if asked or if it has used max_attempts,
-- else re-queue it, after a delay (explicit, or exponential backoff with jitter).
-- A_ERROR error text ("" = none)   A_RETRY_MS retry delay ms (-1 = backoff)
-- A_DEAD_REASON dead-letter now with this reason ("failed", "cancelled"; "" = no)
-- A_MAX_ATTEMPTS max_attempts (0 = unlimited)
-- A_BACKOFF_MS backoff base ms   A_BACKOFF_MAX_MS backoff max ms   A_JITTER jitter factor (0.75..1.25)
-- ARGV[REST], ARGV[REST + 1], ... pairs id, session ("" = any)
-- Returns {code1, due1, code2, due2, ...}: R retried (due = ms when leasable again),
--   D dead, M missing, Z already dead (not live: the id is dead-lettered), N not leased (a
--   live item that was never leased: left as it is, no failure counted), X conflict
--   (another session holds the lease).
-- the definitions of _common.lua and _fair.lua this script names (scripts.py checks):
--@uses NOW count dead_letter del_lease enqueue exhausted forget_suspect held_by_other item_key
--@uses attempts_of keep_attempts
--@uses never_leased not_live unlist wake_waiters wrong_type batch_move
--@uses record_history
do local bad = wrong_type(); if bad then return bad end end
record_history()  -- this minute's history bucket (lua/_history.lua)
local err = A_ERROR
local retry = tonumber(A_RETRY_MS)
local dead_reason = A_DEAD_REASON
local dead = dead_reason ~= ''
local max_attempts = tonumber(A_MAX_ATTEMPTS)
local base, cap, jitter = tonumber(A_BACKOFF_MS), tonumber(A_BACKOFF_MAX_MS), tonumber(A_JITTER)
local out = {}
local failed, retried = 0, 0
local delayed = false -- (some retry waits: one wake-up token, see push.lua)
for i = REST, #ARGV, 2 do
  local id, session = ARGV[i], ARGV[i + 1]
  if held_by_other(id, session) then
    out[#out + 1] = O_CONFLICT; out[#out + 1] = 0
  elseif redis.call('EXISTS', item_key(id)) == 0 then
    out[#out + 1] = not_live(id); out[#out + 1] = 0
  elseif attempts_of(id) == 0 and never_leased(id) then
    out[#out + 1] = O_NOT_LEASED; out[#out + 1] = 0
  else
    failed = failed + 1
    unlist(id)
    keep_attempts(id) -- (its holder entry goes: the count stays)
    del_lease(id)
    forget_suspect(id)
    if err ~= '' then redis.call('HSET', K_ERRORS, id, err) end
    if dead or exhausted(id, max_attempts) then
      dead_letter(id, dead and dead_reason or R_MAX_ATTEMPTS, err)
      out[#out + 1] = O_DEAD; out[#out + 1] = 0
    else
      local delay = retry
      if delay < 0 then
        local attempts = tonumber(redis.call('HGET', K_ATTEMPTS, id)) or 1
        if attempts < 1 then attempts = 1 end
        delay = base * 2 ^ math.min(attempts - 1, 40)
        if delay > cap then delay = cap end
        delay = math.floor(delay * jitter)
      end
      if delay > 0 then
        redis.call('ZADD', K_DELAYED, NOW + delay, id)
        batch_move({id}, S_DELAYED)
        delayed = true
      else
        enqueue(id) -- (fair: back to its tenant)
      end
      retried = retried + 1
      out[#out + 1] = O_RETRIED; out[#out + 1] = NOW + delay
    end
  end
end
if delayed then wake_waiters(1) end
count(C_FAILED, failed)
count(C_RETRIED, retried)
return out
