-- stats: every count in one call, each O(1) or O(log N) whatever the queue's size.
-- Read-only. GENERATION_SAMPLE (limits.py): how many ids at the tail of processing to look at
-- for the other generation's lease keys.
-- Returns {now_ms, other_generation (1 = seen), peer_leased, looked, then the counts it reads
--          in the order of counts.py (COUNTS, their reply fields: pending, processing, leased,
--          delayed, due, dead, oldest_ms (-1 = unknown), paused, limits, tenants), then
--          counter1, value1, ...}
-- other_generation: a queue whose layout writes one generation's keys (v0.3 or v0.1) shows
-- the other's (P:cleaning or P:leased_by_session:<id> for v0.3, P:lease:<id> for v0.1): a
-- peer of that generation shares it. Bounded: one EXISTS per sampled id.
-- leased counts leases in P:leases (granted by rq-cli, or seen by its clean) still running.
-- peer_leased: the live leases of the first LEASED_PAGE ids of processing (the oldest) that
-- P:leases has no live record of (a peer's: peers never write it), looked for only while
-- processing holds more ids than P:leases counts; looked: how many ids that read (reads.py
-- reads the rest of processing a page per call, peer_leases.lua).
-- (fair: pending includes the tenants' sub-queues, counted in K_FAIR)
-- the definitions of _common.lua and _fair.lua this script names (scripts.py checks):
--@uses LAYOUT NOW enqueued_ms lbs_key lease_key peer_leases tenant_key
local pending = redis.call('LLEN', K_QUEUE) + (tonumber(redis.call('HGET', K_FAIR, F_FAIR_PENDING)) or 0)
local processing = redis.call('LLEN', K_PROCESSING)
local leased = redis.call('ZCOUNT', K_LEASES, '(' .. NOW, '+inf')
-- oldest: the push time of the oldest pending item whose push time is known (a peer's items
-- have none; _ages.lua enqueued_ms), -1 if none is. fair: each tenant's oldest item is the tail of its sub-queue;
-- the TENANT_AGE_SAMPLE tenants nearest their turn are looked at (bounded: two reads each).
local oldest = -1
local function consider(tail)
  local t = tail and enqueued_ms(tail)
  if t and (oldest < 0 or t < oldest) then oldest = t end
end
consider(redis.call('LINDEX', K_QUEUE, -1))
for _, t in ipairs(redis.call('LRANGE', K_TENANTS, -TENANT_AGE_SAMPLE, -1)) do
  if t ~= DEFAULT_TENANT then consider(redis.call('LINDEX', tenant_key(t), -1)) end
end
local other = 0
if LAYOUT ~= 'compat' then
  if LAYOUT == 'v0.3' and redis.call('EXISTS', K_CLEANING) == 1 then other = 1 end
  local probe = LAYOUT == 'v0.3' and lbs_key or lease_key
  if other == 0 then
    for _, id in ipairs(redis.call('LRANGE', K_PROCESSING, -GENERATION_SAMPLE, -1)) do
      if redis.call('EXISTS', probe(id)) == 1 then other = 1; break end
    end
  end
end
local peer, looked = 0, 0
if processing > leased then peer, looked = peer_leases(0, LEASED_PAGE) end
local out = {
  NOW, other, peer, looked,
  -- the counts (counts.py), in its order
  pending, processing, leased,
  redis.call('ZCARD', K_DELAYED),
  redis.call('ZCOUNT', K_DELAYED, '-inf', NOW),
  redis.call('ZCARD', K_DEAD),
  oldest,
  redis.call('EXISTS', K_PAUSED),
  redis.call('EXISTS', K_LIMITS), -- fleet-wide limits (rq-cli limit)
  math.max(redis.call('LLEN', K_TENANTS) - 1, 0), -- fair: tenants with work
}
local counters = redis.call('HGETALL', K_COUNTERS)
for i = 1, #counters do out[#out + 1] = counters[i] end
return out
