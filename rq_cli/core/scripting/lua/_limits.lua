-- Fleet-wide limits (docs/DESIGN.md section 9): a queue's rate, by the generic cell rate
-- algorithm (GCRA: its theoretical arrival time kept in P:limits), and its in-flight cap
-- (the leases P:leases counts), applied by lease.lua on the server, so every rq-cli client
-- obeys them. Read by scripts.py's _common() after _fair.lua and _common.lua; a script that
-- names LIMITED gets the queue's limits there (limits_read(), called by its type check). Times in P:limits are
-- microseconds, as integers: a double holds them exactly, and a rate of 7/s loses nothing
-- to a millisecond's rounding. Every definition here is --@lazy: a script call (EVALSHA)
-- on a queue without limits makes none of them.

-- GCRA: how many items a rate of interval t (us) and burst b admits at `now` (us) with arrival
-- time tat (us; nil: none yet), and the arrival time to count on from (at least now).
local function gcra_free(now, tat, t, b) --@lazy
  tat = math.max(tat or now, now)
  return math.floor((now + b * t - tat) / t), tat
end

-- Fair queues: how many of `want` items tenant t's own rate admits now (its fields of
-- P:limits read once per call, into lim.tenants). A spent tenant admits 0 and notes in
-- lim.next (ms) when the soonest spent tenant admits one again. (Called by take_ids as
-- lim:room(t, want): _fair.lua comes first.)
local function tenant_room(lim, t, want) --@lazy
  local st = lim.tenants[t]
  if st == nil then
    local p = F_TENANT_LIMIT .. t .. ':'
    local v = redis.call('HMGET', K_LIMITS, p .. F_INTERVAL_US, p .. F_BURST, p .. F_TAT_US)
    st = v[1] and {interval = tonumber(v[1]), burst = tonumber(v[2]) or 1,
                   tat = tonumber(v[3]), field = p .. F_TAT_US} or false
    lim.tenants[t] = st
  end
  if not st then return want end
  local free
  free, st.tat = gcra_free(NOW * 1000, st.tat, st.interval, st.burst)
  if free <= 0 then
    local at = math.ceil((st.tat - (st.burst - 1) * st.interval) / 1000)
    if not lim.next or at < lim.next then lim.next = at end
    return 0
  end
  return math.min(want, free)
end

-- n items of tenant t were taken (after tenant_room): its arrival time moves on (written by
-- limit_took). (lim:took(t, n) in take_ids.)
local function tenant_took(lim, t, n) --@lazy
  local st = lim.tenants[t]
  if st and n > 0 then
    st.tat = st.tat + n * st.interval
    st.dirty = true
  end
end

-- The queue's limits (P:limits), or false when it has none: interval (GCRA's T, us), burst,
-- cap (in-flight), tat (us), nil where unset; tenants: each tenant's own rate as
-- tenant_room reads it. Called by wrong_type() (scripts.py), before the script writes
-- anything: this HMGET stops a script whose P:limits has another type.
local function limits_read() --@lazy
  local v = redis.call('HMGET', K_LIMITS, F_INTERVAL_US, F_BURST, F_MAX_IN_FLIGHT, F_TAT_US,
    F_TENANTS)
  if not (v[1] or v[3] or v[4] or v[5]) then return false end
  return {interval = tonumber(v[1]), burst = tonumber(v[2]) or 1, cap = tonumber(v[3]),
          tat = tonumber(v[4]), tenants = {}, room = tenant_room, took = tenant_took}
end

-- How many of `want` items the limits `lim` admit now: n > 0; or 0, the lease status and
-- when (ms) the next lease can succeed: the cap reached (LEASE_CAPPED), at the earliest
-- lease deadline (a complete frees a place sooner, and says so on K_FREED); the rate spent
-- (LEASE_LIMITED), exactly when GCRA admits one more.
local function limit_room(lim, want) --@lazy
  local room = want
  if lim.cap then
    room = math.min(room, lim.cap - redis.call('ZCOUNT', K_LEASES, '(' .. NOW, '+inf'))
    if room <= 0 then
      local first = redis.call('ZRANGE', K_LEASES, '(' .. NOW, '+inf', 'BYSCORE', 'LIMIT', 0, 1,
        'WITHSCORES')
      return 0, LEASE_CAPPED, tonumber(first[2]) or NOW
    end
  end
  if lim.interval then
    local free
    free, lim.tat = gcra_free(NOW * 1000, lim.tat, lim.interval, lim.burst)
    if free <= 0 then
      return 0, LEASE_LIMITED, math.ceil((lim.tat - (lim.burst - 1) * lim.interval) / 1000)
    end
    room = math.min(room, free)
  end
  return room
end

-- n items were taken under limits `lim` (after limit_room): the rate's arrival time, and each
-- tenant's that took items, move on (one HSET).
local function limit_took(lim, n) --@lazy
  local fields = {}
  if lim.interval and n > 0 then
    fields[1], fields[2] = F_TAT_US, string.format('%.0f', lim.tat + n * lim.interval)
  end
  for _, st in pairs(lim.tenants) do
    if st and st.dirty then
      fields[#fields + 1] = st.field
      fields[#fields + 1] = string.format('%.0f', st.tat)
    end
  end
  if #fields > 0 then redis.call('HSET', K_LIMITS, unpack(fields)) end
end

-- n leases were freed (completed) on a queue with limits `lim`: with an in-flight cap, wake up
-- to n clients waiting for a place. They block on K_FREED (BLPOP): a token per place, at
-- most WAKE_TOKENS kept, gone WAKE_TTL_MS after the last (a token nobody took costs a later
-- waiter one lease that finds the cap reached).
local function limit_freed(lim, n) --@lazy
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
