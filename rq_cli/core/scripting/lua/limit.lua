-- limit: set, clear or show a queue's fleet-wide limits (P:limits: docs/DESIGN.md section 9,
-- _limits.lua), in one step.
-- Arguments (scripts.py SPECS): A_MODE "set", "clear" (P:limits and P:freed deleted) or
-- "show"; A_TENANT: "" for the queue's limits, or a tenant's own rate (fair queues: its
-- fields "tenant:<t>:<field>", cleared alone); for "set": A_RATE (as written: "20/s"),
-- A_INTERVAL_US (GCRA's T) and A_BURST, or "" to leave the rate as it is; A_MAX_IN_FLIGHT,
-- "" to leave the cap, "0" to remove it (the queue's only).
-- A rate changed while workers run applies at once: an arrival time further ahead than one
-- new interval (a slower rate's) comes back to one interval from now.
-- Returns {rate, interval_us, burst, max_in_flight, in_flight, now_ms}: false where unset;
-- in_flight: the live leases P:leases counts (what the cap counts).
--@uses NOW wrong_type
do local bad = wrong_type(); if bad then return bad end end
-- (the limits' keys, which wrong_type() leaves to the scripts that read them: scripts.py)
for i, key in ipairs({K_LIMITS, K_FREED}) do
  local t, want = redis.call('TYPE', key)['ok'], i == 1 and 'hash' or 'list'
  if t ~= 'none' and t ~= want then
    return redis.error_reply('WRONGTYPE key ' .. key .. ' holds a ' .. t .. ', not a ' .. want ..
      ': something other than this queue uses the prefix; nothing was changed')
  end
end
-- a field of this call's limits: the queue's, or the tenant's own
local function field(name)
  if A_TENANT == '' then return name end
  return F_TENANT_LIMIT .. A_TENANT .. ':' .. name
end
if A_MODE == 'clear' and A_TENANT ~= '' then
  redis.call('HDEL', K_LIMITS, field(F_RATE), field(F_INTERVAL_US), field(F_BURST),
    field(F_TAT_US))
elseif A_MODE == 'clear' then
  redis.call('DEL', K_LIMITS, K_FREED)
elseif A_MODE == 'set' then
  if A_INTERVAL_US ~= '' then
    local t, now = tonumber(A_INTERVAL_US), NOW * 1000
    local tat = tonumber(redis.call('HGET', K_LIMITS, field(F_TAT_US)))
    if tat and tat > now + t then
      redis.call('HSET', K_LIMITS, field(F_TAT_US), string.format('%.0f', now + t))
    end
    redis.call('HSET', K_LIMITS, field(F_RATE), A_RATE, field(F_INTERVAL_US), A_INTERVAL_US,
      field(F_BURST), A_BURST)
    if A_TENANT ~= '' then redis.call('HSET', K_LIMITS, F_TENANTS, '1') end
  end
  if A_MAX_IN_FLIGHT == '0' then
    redis.call('HDEL', K_LIMITS, F_MAX_IN_FLIGHT)
  elseif A_MAX_IN_FLIGHT ~= '' then
    redis.call('HSET', K_LIMITS, F_MAX_IN_FLIGHT, A_MAX_IN_FLIGHT)
  end
end
local v = redis.call('HMGET', K_LIMITS, field(F_RATE), field(F_INTERVAL_US), field(F_BURST),
  F_MAX_IN_FLIGHT)
v[5] = redis.call('ZCOUNT', K_LEASES, '(' .. NOW, '+inf')
v[6] = NOW
return v
