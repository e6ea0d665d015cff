-- Fleet-wide limits (docs/DESIGN.md section 9): a queue's rate, by the generic cell rate
-- algorithm (GCRA: its theoretical arrival time kept in P:limits), and its in-flight cap
-- (the leases P:leases counts), applied by lease.lua on the server, so every rq-cli client
-- obeys them. Read by scripts.py's _common() after _fair.lua and _common.lua; a script that
-- names these reads LIMITED (its type check: the limits' keys exist). Times in P:limits are
-- microseconds, as integers: a double holds them exactly, and a rate of 7/s loses nothing
-- to a millisecond's rounding.

-- The queue's limits (P:limits): interval (GCRA's T, us), burst, cap (in-flight), tat (us);
-- nil where unset. Called before the script writes anything: wrong_type() does not check
-- P:limits (scripts.py), and this HMGET stops a script whose P:limits has another type.
local function limits_read()
  local v = redis.call('HMGET', K_LIMITS, F_INTERVAL_US, F_BURST, F_MAX_IN_FLIGHT, F_TAT_US)
  return {interval = tonumber(v[1]), burst = tonumber(v[2]) or 1, cap = tonumber(v[3]),
          tat = tonumber(v[4])}
end

-- How many of `want` items the limits `lim` admit now: n > 0; or 0, the lease status and
-- when (ms) the next lease can succeed: the cap reached (LEASE_CAPPED), at the earliest
-- lease deadline (a complete frees a place sooner, and says so on K_FREED); the rate spent
-- (LEASE_LIMITED), exactly when GCRA admits one more.
local function limit_room(lim, want)
  local room = want
  if lim.cap then
    room = math.min(room, lim.cap - redis.call('ZCOUNT', K_LEASES, '(' .. NOW, '+inf'))
    if room <= 0 then
      local first = redis.call('ZRANGE', K_LEASES, '(' .. NOW, '+inf', 'BYSCORE', 'LIMIT', 0, 1,
        'WITHSCORES')
      return 0, LEASE_CAPPED, tonumber(first[2]) or NOW
    end
  end
  local t = lim.interval
  if t then
    local now = NOW * 1000
    local tat = math.max(lim.tat or now, now)
    lim.tat = tat
    local free = math.floor((now + lim.burst * t - tat) / t)
    if free <= 0 then
      return 0, LEASE_LIMITED, math.ceil((tat - (lim.burst - 1) * t) / 1000)
    end
    room = math.min(room, free)
  end
  return room
end

-- n items were taken under limits `lim` (after limit_room): the rate's arrival time moves on
-- by n intervals.
local function limit_took(lim, n)
  if lim.interval and n > 0 then
    redis.call('HSET', K_LIMITS, F_TAT_US, string.format('%.0f', lim.tat + n * lim.interval))
  end
end

-- n leases were freed (completed) on a queue with limits `lim`: with an in-flight cap, wake up
-- to n clients waiting for a place. They block on K_FREED (BLPOP): a token per place, at
-- most WAKE_TOKENS kept, gone WAKE_TTL_MS after the last (a token nobody took costs a later
-- waiter one lease that finds the cap reached).
local function limit_freed(lim, n)
  if not lim.cap or n <= 0 then return end
  local tokens = {}
  for i = 1, math.min(n, WAKE_TOKENS) do tokens[i] = '1' end
  -- (pcall: a P:freed of another type, not checked by wrong_type(), wakes nobody and stops
  -- nothing; waiters wake at their time-out)
  local n = redis.pcall('RPUSH', K_FREED, unpack(tokens))
  if type(n) ~= 'number' then return end
  if n > WAKE_TOKENS then redis.call('LTRIM', K_FREED, -WAKE_TOKENS, -1) end
  redis.call('PEXPIRE', K_FREED, WAKE_TTL_MS)
end
