-- batch_hold: a push stream of several calls holds batch A_NAME open while it pushes, so the
-- batch cannot finish between two of its calls when workers are faster than the input
-- (docs/DESIGN.md section 8). A_MODE "open": one more hold (B.HOLDS), held until now +
-- B.OPEN_MS (renewed by each push.lua call into the batch: a crashed pusher's hold runs
-- out); makes the record (A_TTL_MS: the queue's batch_ttl) if it has none. "close": one hold
-- less (the last one gone, the deadline goes too). Then settles the batch (batch_settle:
-- finishes it if nothing is open, or opens it again).
-- Returns the holds left.
--@uses NOW batch_listed batch_settle
local key = batch_key(B.RECORD, A_NAME)
local holds
if A_MODE == 'open' then
  holds = redis.call('HINCRBY', key, B.HOLDS, 1)
  redis.call('HSET', key, B.OPEN_UNTIL, NOW + B.OPEN_MS)
  if redis.call('HSETNX', key, B.CREATED, NOW) == 1 then batch_listed(A_NAME) end
  redis.call('HSETNX', key, B.TTL, A_TTL_MS)
  redis.call('HSETNX', key, B.TOTAL, 0)
else
  if redis.call('EXISTS', key) == 0 then return 0 end
  holds = redis.call('HINCRBY', key, B.HOLDS, -1)
  if holds <= 0 then
    holds = 0
    redis.call('HDEL', key, B.HOLDS, B.OPEN_UNTIL)
  end
end
batch_settle(A_NAME)
return holds
