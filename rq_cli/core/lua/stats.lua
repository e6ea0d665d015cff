-- stats: every count in one call, each O(1) or O(log N) whatever the queue's size.
-- Read-only. No arguments of its own.
-- Returns {pending, processing, leased, delayed, due, dead, oldest_enqueued_ms (-1 = unknown),
--          paused, now_ms, counter1, value1, ...}
-- leased counts leases in P:leases (granted by rq-cli, or seen by its clean) still running.
local pending = redis.call('LLEN', K_QUEUE)
local processing = redis.call('LLEN', K_PROCESSING)
local leased = redis.call('ZCOUNT', K_LEASES, '(' .. NOW, '+inf')
local oldest = -1
local tail = redis.call('LINDEX', K_QUEUE, -1)
if tail then oldest = tonumber(redis.call('HGET', K_ENQUEUED, tail)) or -1 end
local out = {
  pending, processing, leased,
  redis.call('ZCARD', K_DELAYED),
  redis.call('ZCOUNT', K_DELAYED, '-inf', NOW),
  redis.call('ZCARD', K_DEAD),
  oldest,
  redis.call('EXISTS', K_PAUSED),
  NOW,
}
local counters = redis.call('HGETALL', K_COUNTERS)
for i = 1, #counters do out[#out + 1] = counters[i] end
return out
