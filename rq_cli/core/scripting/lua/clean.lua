-- clean (light), one bounded step. Looks at up to `limit` ids from the tail of P:processing,
-- rotating each one it keeps to the head (RPOPLPUSH), so successive calls visit the list
-- once without ever reading it whole (one "pass"):
--   * no data (ghost): dropped;
--   * leased: kept (a lease granted by a peer client is noted in P:leases for stats);
--   * no lease: noted in P:suspects on first sight; once it has been lease-less for the
--     grace period it is dead-lettered if it has used max_attempts, else re-queued.
-- At the end of a pass, ids left in the v0.1 cleaning journal (P:cleaning) by a crashed peer
-- cleaner are recovered the same way, due delayed items are promoted, and sightings that
-- this pass did not renew are forgotten: an id that left processing (a peer cleaner
-- re-queued it) and came back later starts its grace period afresh.
-- A sighting is stored as "<first seen ms>:<last seen ms>". The first call of a pass also
-- snapshots the counters into the history (snapshot_history in _common.lua).
-- A_LIMIT limit   A_LEFT how many processing ids are left to visit (-1 = start a pass)
-- A_GRACE_MS grace ms   A_MAX_ATTEMPTS max_attempts   A_FRONT "1" = re-queue at the front
-- A_DRY_RUN "1" = dry run: change nothing, report what would be done (A_LEFT = offset)
-- A_PASS_START when the pass started (ms; ignored when starting a pass)
-- A_SAMPLE how many ids to sample from each bookkeeping key at the end of a pass (prune)
-- A_EXPIRED_OFFSET past-due ids of P:expires that earlier calls of this pass kept (0 first)
-- Returns {left, recovered, dropped, dead, suspects, promoted, more_due, pass start, pruned,
--   (... and last, batch_items: > 0 if the queue has batch items or items held by push
--   --after, for clean's batch sweep)
--          expired_offset} (dead: dead-lettered, at max_attempts or expired)
-- (pruned: ids whose bookkeeping the sampled prune dropped, plus expired ids of the de-dup
-- window forgotten at the end of a pass, `limit` at most; more_due is also set while more
-- of those may be left)
-- the definitions of _common.lua and _fair.lua this script names (scripts.py checks):
--@uses NOW count dead_letter drop drop_meta enqueue exhausted item_key lease_holder lease_pttl
--@uses promote_due prune_dedup snapshot_history tenant_key tenant_removed wrong_type
do local bad = wrong_type(); if bad then return bad end end
local limit = tonumber(A_LIMIT)
local left = tonumber(A_LEFT)
local grace = tonumber(A_GRACE_MS)
local max_attempts = tonumber(A_MAX_ATTEMPTS)
local front = A_FRONT == '1'
local dry = A_DRY_RUN == '1'
local pass_start = tonumber(A_PASS_START)
local sample = tonumber(A_SAMPLE)
local recovered, dropped, dead, suspects, promoted, more_due = 0, 0, 0, 0, 0, 0
local pruned = 0
local expired_offset = tonumber(A_EXPIRED_OFFSET)

if left < 0 then
  pass_start = NOW
  left = dry and 0 or redis.call('LLEN', K_PROCESSING)
  -- history: clean runs every minute from cron, so its first call of a pass snapshots the
  -- counters (the manual: docs/commands.md, "rq-cli stats", --history), at no cost per item
  if not dry then snapshot_history() end
end

-- Has `field`'s id been lease-less for the grace period (and at least `least` ms, if given)?
-- Notes (or renews) the sighting.
-- An id that left processing (a peer cleaner re-queued it) is not seen by the next pass,
-- which then forgets its sighting (below): when it comes back it is a new suspect.
local function overdue(field, least)
  local first
  local seen = redis.call('HGET', K_SUSPECTS, field)
  if seen then first = tonumber(string.match(seen, '^(%d+):')) end
  first = first or NOW
  if not dry then redis.call('HSET', K_SUSPECTS, field, first .. ':' .. NOW) end
  return NOW - first >= math.max(grace, least or 0)
end

-- A peer client that completes an item knows nothing of rq-cli's per-item bookkeeping, which
-- stays behind; nor of P:delayed: a v0.3 peer's deep clean hands out a delayed item at once,
-- and once it is completed its id stays there, a ghost (no data) that stats counts. Drop
-- the bookkeeping and the delayed entry of ids whose item is gone (neither live nor dead),
-- from a random sample of `sample` ids of each bookkeeping key and of P:delayed: bounded
-- per call, and repeated passes (cron) wear the leftovers down. Deep clean sweeps them all.
local function prune_sampled()
  local seen = {}
  local function check(id)
    if seen[id] then return end
    seen[id] = true
    if redis.call('EXISTS', item_key(id)) == 0 and not redis.call('ZSCORE', K_DEAD, id) then
      if not dry then
        drop_meta(id)
        redis.call('ZREM', K_DELAYED, id)
      end
      pruned = pruned + 1
    end
  end
  for _, list in ipairs({META_USUAL, META_RARE, {{'ZREM', K_DELAYED}}}) do
    for _, drop in ipairs(list) do  -- {command that drops an entry, key}: HDEL for a hash
      local pick = drop[1] == 'HDEL' and 'HRANDFIELD' or 'ZRANDMEMBER'
      for _, id in ipairs(redis.call(pick, drop[2], sample)) do check(id) end
    end
  end
end

-- The expiry of id (push --expire), when it has passed: then the item dead-letters as
-- expired where it would be put back in line.
local function expired_at(id)
  local exp = tonumber(redis.call('ZSCORE', K_EXPIRES, id))
  return exp and exp <= NOW and exp
end

local function recover(id)
  local exp = expired_at(id)
  if exp then
    if not dry then dead_letter(id, R_EXPIRED, nil, exp) end
    dead = dead + 1
  elseif exhausted(id, max_attempts) then
    if not dry then dead_letter(id, R_MAX_ATTEMPTS) end
    dead = dead + 1
  else
    if not dry then
      enqueue(id, front)
      redis.call('ZREM', K_LEASES, id)
    end
    recovered = recovered + 1
  end
end

if dry then
  -- Read-only pass over a window of the list, from the tail; `left` is the offset.
  local ids = redis.call('LRANGE', K_PROCESSING, -(left + limit), -(left + 1))
  for _, id in ipairs(ids) do
    if redis.call('EXISTS', item_key(id)) == 0 then dropped = dropped + 1
    elseif not lease_holder(id) then
      if overdue(SEEN_PROCESSING .. id) then recover(id) else suspects = suspects + 1 end
    end
  end
  if #ids < limit then left = 0 else left = left + limit end
else
  local n = math.min(limit, left)
  for _ = 1, n do
    local id = redis.call('LINDEX', K_PROCESSING, -1)
    if not id then left = 0; break end
    left = left - 1
    if redis.call('EXISTS', item_key(id)) == 0 then
      redis.call('RPOP', K_PROCESSING)
      drop_meta(id)
      dropped = dropped + 1
    elseif lease_holder(id) then
      redis.call('RPOPLPUSH', K_PROCESSING, K_PROCESSING)
      redis.call('HDEL', K_SUSPECTS, SEEN_PROCESSING .. id)
      if not redis.call('ZSCORE', K_LEASES, id) then
        local ttl = lease_pttl(id)
        if ttl > 0 then redis.call('ZADD', K_LEASES, NOW + ttl, id) end
      end
    elseif overdue(SEEN_PROCESSING .. id) then
      redis.call('RPOP', K_PROCESSING)
      redis.call('HDEL', K_SUSPECTS, SEEN_PROCESSING .. id)
      recover(id)
    else
      redis.call('RPOPLPUSH', K_PROCESSING, K_PROCESSING)
      suspects = suspects + 1
    end
  end
end

-- Expired items (push --expire) waiting in line or delayed: dead-lettered as a lease that
-- reached them would, `n` of P:expires' past-due ids at most, from `offset` (the ids an
-- earlier call of this pass kept). Kept (offset grows): an item someone holds (its worker
-- has it; if its lease runs out, recover() dead-letters it), and a pending one not within
-- EXPIRED_REACH ids of its line's right end (P:queue, or its tenant's sub-queue: LREM is
-- O(distance); it moves there as items are leased). An id
-- whose item is gone (a peer completed it) loses its bookkeeping. Bounded: n ids, two scans
-- of EXPIRED_REACH at most each. Returns how many it dead-lettered, the next offset and
-- whether more may be left.
local function expire_due(offset, n)
  local got = redis.call('ZRANGEBYSCORE', K_EXPIRES, '-inf', NOW, 'WITHSCORES', 'LIMIT', offset, n)
  local killed = 0
  for i = 1, #got, 2 do
    local id, exp = got[i], tonumber(got[i + 1])
    if redis.call('EXISTS', item_key(id)) == 0 then
      drop_meta(id)
    elseif lease_holder(id) then
      offset = offset + 1
    elseif redis.call('ZREM', K_DELAYED, id) == 1 then
      dead_letter(id, R_EXPIRED, nil, exp)
      killed = killed + 1
    else
      local t = redis.call('HGET', K_ITEM_TENANT, id) -- (fair: its tenant's sub-queue)
      local line = t and tenant_key(t) or K_QUEUE
      if redis.call('LPOS', line, id, 'RANK', -1, 'MAXLEN', EXPIRED_REACH) then
        redis.call('LREM', line, -1, id)
        if t then tenant_removed(t, line, 1) end
        dead_letter(id, R_EXPIRED, nil, exp)
        killed = killed + 1
      else
        offset = offset + 1 -- (in processing, lease-less: the pass recovers it; or far in line)
      end
    end
  end
  return killed, offset, #got == 2 * n
end

if left <= 0 then
  -- The v0.1 journal: a peer cleaner LPUSHes an id here, LREMs it from processing, LPUSHes
  -- it to the queue, then LREMs it from here. An id still here after the grace period is
  -- dropped from here when it is in either list (that cleaner got that far); with no lease
  -- and in neither list, it is recovered once JOURNAL_GRACE_MS has passed too: a slow (not
  -- crashed) cleaner between its LREM and its LPUSH would push it as well. (Rare; LPOS is
  -- O(N).)
  local ids = redis.call('LRANGE', K_CLEANING, -100, -1)
  for _, id in ipairs(ids) do
    local field = SEEN_CLEANING .. id
    local done = redis.call('EXISTS', item_key(id)) == 0 or lease_holder(id)
    local lost = false
    if not done and overdue(field) then
      done = redis.call('LPOS', K_QUEUE, id) or redis.call('LPOS', K_PROCESSING, id)
      lost = not done and overdue(field, JOURNAL_GRACE_MS)
    end
    if done or lost then
      if not dry then
        redis.call('LREM', K_CLEANING, 0, id)
        redis.call('HDEL', K_SUSPECTS, field)
      end
      if lost then recover(id) end
    else
      suspects = suspects + 1
    end
  end
  if sample > 0 then prune_sampled() end
  if dry then
    promoted = redis.call('ZCOUNT', K_DELAYED, '-inf', NOW)
  else
    local more
    promoted, more = promote_due(limit)
    if more then more_due = 1 end
    local forgotten
    forgotten, more = prune_dedup(limit)
    pruned = pruned + forgotten
    if more then more_due = 1 end
    local killed
    killed, expired_offset, more = expire_due(expired_offset, EXPIRED_BATCH)
    dead = dead + killed
    if more then more_due = 1 end
    -- Forget sightings this pass did not renew (bounded: the hash holds only lease-less ids;
    -- deep clean's "d:" sightings are its own).
    if redis.call('HLEN', K_SUSPECTS) <= SUSPECTS_KEPT then
      local all = redis.call('HGETALL', K_SUSPECTS)
      for i = 1, #all, 2 do
        local field = all[i]
        local last = tonumber(string.match(all[i + 1], ':(%d+)$'))
        if string.sub(field, 1, 2) ~= SEEN_STRAY and (not last or last < pass_start) then
          redis.call('HDEL', K_SUSPECTS, field)
        end
      end
    end
  end
end

count(C_CLEANED, dry and 0 or recovered)
return {left, recovered, dropped, dead, suspects, promoted, more_due, pass_start, pruned,
        expired_offset, redis.call('EXISTS', K_ITEM_BATCH, K_AFTERS)} -- (batchops.sweep)
