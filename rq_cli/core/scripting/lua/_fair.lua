-- Fair queues (the manual: docs/fair-queues.md; prepended to every script, before _common.lua).
--
-- A tenant T's pending items wait in its sub-queue P:tenant:<T> (a LIST, like P:queue);
-- items pushed without a tenant (and every item a peer client pushes) wait in P:queue, the
-- default tenant. The ring K_TENANTS (a LIST) names the tenants with work; its right end has
-- the turn. Invariant: a tenant is in the ring exactly while its sub-queue is not empty
-- (it joins when a push or requeue finds the sub-queue empty, and leaves when a lease or
-- purge empties it); DEFAULT_TENANT ("") is in the ring while any tenant is. Without a ring
-- a lease takes from P:queue exactly as before. Every step is O(1) in the number of tenants:
-- the ring is only ever read or changed at its ends (LINDEX, LMOVE, LPOP, RPOP, LPUSH).
-- K_FAIR "turn" counts the items the head tenant has had in its turn; a tenant with weight w
-- (K_TENANT_WEIGHTS, default 1) has up to w items per turn. K_FAIR "pending" counts the ids
-- in the tenants' sub-queues (every push into and pop from them is here), for stats. K_ITEM_TENANT remembers each
-- tenanted item's tenant, so that fail, clean and requeue-dead return it to its sub-queue.
-- A script may name a tenant's sub-queue in KEYS[2] (push: the tenant to push into).

local function tenant_key(t)
  if t == DEFAULT_TENANT then return K_QUEUE end
  return TENANT_KEY_PREFIX .. t
end

-- The tenant named by KEYS[2] (P:tenant:<T>), or nil.
local KEY_TENANT = KEYS[2] and string.sub(KEYS[2], #TENANT_KEY_PREFIX + 1) or nil

-- Fair queues (K_FAIR exists: the queue has had tenants): n items were put in line, so wake
-- up to n clients waiting in `lease --wait`. They block on K_WAKE (BLPOP), as a push into a
-- tenant's sub-queue does not touch P:queue: a token per item, at most WAKE_TOKENS kept,
-- gone WAKE_TTL_MS after the last (a token nobody took costs a later waiter one lease that
-- finds nothing). A call that delays items wakes one (it leases again and learns when the
-- first falls due). Elsewhere waiters block on P:queue itself, and nothing is written.
-- WAKE_FAIR: whether this call's queue is fair, read at its first wake_waiters (nil before;
-- it names KEYS, so the Functions library sets it again at each call's begin: scripts.py),
-- so a script putting many items in line reads K_FAIR once, not once per item.
local WAKE_FAIR = KEYS and nil
local function wake_waiters(n)
  if n <= 0 then return end
  if WAKE_FAIR == nil then WAKE_FAIR = redis.call('EXISTS', K_FAIR) == 1 end
  if not WAKE_FAIR then return end
  local tokens = {}
  for i = 1, math.min(n, WAKE_TOKENS) do tokens[i] = '1' end
  if redis.call('RPUSH', K_WAKE, unpack(tokens)) > WAKE_TOKENS then
    redis.call('LTRIM', K_WAKE, -WAKE_TOKENS, -1)
  end
  redis.call('PEXPIRE', K_WAKE, WAKE_TTL_MS)
end

-- Put tenant t in the ring if its sub-queue `key` is empty (call before pushing into it).
local function join_ring(t, key)
  if redis.call('LLEN', key) > 0 then return end
  if redis.call('EXISTS', K_TENANTS) == 0 then
    redis.call('LPUSH', K_TENANTS, DEFAULT_TENANT)
    redis.call('HSET', K_FAIR, F_FAIR_TURN, 0)
    WAKE_FAIR = true -- (K_FAIR exists now, if it did not)
  end
  redis.call('LPUSH', K_TENANTS, t)
end

-- The list a live item `id` waits in when it is put back in line: its tenant's sub-queue
-- (joining the ring if need be), or P:queue.
local function line_of(id)
  local t = redis.call('HGET', K_ITEM_TENANT, id)
  if not t then return K_QUEUE end
  local key = tenant_key(t)
  join_ring(t, key)
  redis.call('HINCRBY', K_FAIR, F_FAIR_PENDING, 1)
  return key
end

-- push: remember the tenant of the items just added; returns the list they go to.
-- `to_line` false: they are delayed (promotion puts them in line, through line_of).
local function tenant_pushed(ids, to_line)
  if not KEY_TENANT then return K_QUEUE end
  local pairs_ = {}
  for i, id in ipairs(ids) do
    pairs_[2 * i - 1] = id
    pairs_[2 * i] = KEY_TENANT
  end
  if #ids > UNPACK_CHUNK then
    for i = 1, #pairs_, UNPACK_CHUNK do
      redis.call('HSET', K_ITEM_TENANT, unpack(pairs_, i, math.min(i + 3999, #pairs_)))
    end
  elseif #ids > 0 then
    redis.call('HSET', K_ITEM_TENANT, unpack(pairs_))
  end
  if to_line and #ids > 0 then
    join_ring(KEY_TENANT, KEYS[2])
    redis.call('HINCRBY', K_FAIR, F_FAIR_PENDING, #ids)
  end
  return KEYS[2]
end

-- The tenant a dead item had (from its dead_info JSON), or nil.
local function dead_tenant(id)
  local info = redis.call('HGET', K_DEAD_INFO, id)
  if not info then return nil end
  local ok, meta = pcall(cjson.decode, info)
  if ok and type(meta) == 'table' and type(meta.tenant) == 'string' then return meta.tenant end
  return nil
end

-- The ring's head leaves it (its sub-queue is empty); with only the default tenant left,
-- the ring goes (leases take from P:queue directly again).
local function leave_ring()
  redis.call('RPOP', K_TENANTS)
  if redis.call('LLEN', K_TENANTS) <= 1 then redis.call('DEL', K_TENANTS) end
  redis.call('HSET', K_FAIR, F_FAIR_TURN, 0)
end

-- n ids left the tenants' sub-queues
local function tenant_popped(n)
  if n > 0 then redis.call('HINCRBY', K_FAIR, F_FAIR_PENDING, -n) end
end

-- n ids were taken out of tenant t's sub-queue `key` other than by a lease (purge, clean's
-- expired items): counted, and an emptied sub-queue leaves the ring (O(tenants with work),
-- once per emptied sub-queue; a lease never does this).
local function tenant_removed(t, key, n) --@lazy
  tenant_popped(n)
  if redis.call('LLEN', key) == 0 then
    if redis.call('LINDEX', K_TENANTS, -1) == t then
      redis.call('HSET', K_FAIR, F_FAIR_TURN, 0) -- it had the turn: the next one starts afresh
    end
    redis.call('LREM', K_TENANTS, 0, t)
    if redis.call('LLEN', K_TENANTS) <= 1 then redis.call('DEL', K_TENANTS) end
  end
end

-- Take up to n ids to lease, round-robin over the ring (RPOP from P:queue when there is no
-- ring). Returns a list, or false when there is nothing. Each loop either takes at least one
-- id or passes an empty default tenant, which is followed by a tenant with work: at most
-- 2n + 2 loops, whatever the number of tenants. lim: the queue's limits (_limits.lua), or nil:
-- a tenant whose own rate is spent passes its turn (within the same 2n + 2 loops).
local function take_ids(n, lim)
  -- (QUIET: no rare key exists, the ring included: no EXISTS needed)
  if QUIET or redis.call('EXISTS', K_TENANTS) == 0 then return redis.call('RPOP', K_QUEUE, n) end
  local ids = {}
  local used = tonumber(redis.call('HGET', K_FAIR, F_FAIR_TURN)) or 0
  local popped = 0
  -- each tenant's weight, read once per call (none to read when no weight is set)
  local weights = {}
  local weighted = redis.call('EXISTS', K_TENANT_WEIGHTS) == 1
  for _ = 1, 2 * n + 2 do
    -- the head has its turn, and goes to the back of the ring at once (LMOVE returns it)
    local head = redis.call('LMOVE', K_TENANTS, K_TENANTS, 'RIGHT', 'LEFT')
    if not head then break end
    local weight = 1
    if weighted and head ~= DEFAULT_TENANT then
      weight = weights[head]
      if not weight then
        weight = tonumber(redis.call('HGET', K_TENANT_WEIGHTS, head)) or 1
        weights[head] = weight
      end
    end
    local line = tenant_key(head)
    local got = false
    local allow = weight - used
    if lim and allow > 0 and head ~= DEFAULT_TENANT then allow = lim:room(head, allow) end
    if allow > 0 then got = redis.call('RPOP', line, math.min(allow, n - #ids)) end
    if got and lim then lim:took(head, #got) end
    if got then
      for _, id in ipairs(got) do ids[#ids + 1] = id end
      used = used + #got
      if head ~= DEFAULT_TENANT then popped = popped + #got end
    end
    if head ~= DEFAULT_TENANT and redis.call('LLEN', line) == 0 then
      -- its sub-queue is empty: it leaves the ring (from the back, where it now is)
      redis.call('LPOP', K_TENANTS)
      if redis.call('LLEN', K_TENANTS) <= 1 then redis.call('DEL', K_TENANTS) end
      used = 0
    elseif used >= weight or not got then
      used = 0 -- its turn is over: it stays at the back
    else
      -- its turn goes on (into the next call, or this one's next loop): back to the head
      redis.call('LMOVE', K_TENANTS, K_TENANTS, 'LEFT', 'RIGHT')
    end
    if #ids >= n then break end
  end
  if redis.call('EXISTS', K_TENANTS) == 1 then redis.call('HSET', K_FAIR, F_FAIR_TURN, used) end
  tenant_popped(popped)
  if #ids == 0 then return false end
  return ids
end

-- purge pending: up to n ids out of P:queue, then out of the sub-queues of the tenants at the
-- ring's head (each leaves the ring once emptied). Returns a list, or false when all are
-- empty. At most 2n + 2 loops, each popping at least one id or passing the default tenant.
local function take_pending(n)
  local ids = redis.call('RPOP', K_QUEUE, n) or {}
  local popped = 0
  for _ = 1, 2 * n + 2 do
    if #ids >= n then break end
    local head = redis.call('LINDEX', K_TENANTS, -1)
    if not head then break end
    if head == DEFAULT_TENANT then
      redis.call('LMOVE', K_TENANTS, K_TENANTS, 'RIGHT', 'LEFT')
      if redis.call('LLEN', K_TENANTS) <= 1 then redis.call('DEL', K_TENANTS) end
    else
      local key = tenant_key(head)
      local got = redis.call('RPOP', key, n - #ids)
      if got then
        for _, id in ipairs(got) do ids[#ids + 1] = id end
        popped = popped + #got
      end
      if redis.call('LLEN', key) == 0 then leave_ring() end
    end
  end
  tenant_popped(popped)
  if #ids == 0 then return false end
  return ids
end
