-- push: add items; an item is added only if P:item:<id> does not exist (dedup by id).
-- A_FRONT front: "1" = leased next (RPUSH), else the back of the line (LPUSH)
-- A_DELAY_MS delay in ms (0 = ready now; > 0 = goes to P:delayed, due at now + delay)
-- A_EXPIRE_MS expiry in ms after now (0 = never): not leased after that, dead-lettered as expired
-- A_FRESH "1" = every id is freshly made at random by the caller: no item can have it, so
--         the data is written with one MSET (no SET NX each) and the reused-id reset below
--         is skipped
-- A_BATCH the batch the items join ("" = none; docs/DESIGN.md section 8), A_BATCH_TTL_MS how
--         long it is kept once finished (set by its first push)
-- A_AFTER the batch the items wait for ("" = none: push --after), A_AFTER_MODE B.AFTER_ANY or
--         B.AFTER_OK (--after-ok)
-- ARGV[REST], ARGV[REST + 1], ... pairs id, data (at most a few thousand pairs per call)
-- The push time: a P:enqueued stamp only for an id that does not carry it within
-- PUSH_STAMP_SLACK_MS (_ages.lua; rq-cli's random ids are v7: no stamp).
-- Returns a string with one character per item: "1" added, "0" duplicate (an item with
-- that id is live), "2" dead (the id is dead-lettered: an id names one item at a time, live
-- or dead; requeue-dead or purge --state dead frees it), "3" recently completed (in the
-- queue's de-dup window, P:dedup: `rq-cli dedup --clear` forgets it).
-- the definitions of _common.lua and _fair.lua this script names (scripts.py checks):
--@uses NOW QUIET call_all count drop_metas lbs_key lease_key tenant_pushed wrong_type
--@uses prune_dedup unstamped wake_waiters zadd_after batch_join batch_hold_items batch_move
--@uses record_history
local call = redis.call
do local bad = wrong_type(); if bad then return bad end end
-- a shard retired by a resize of its sharded queue (docs/DESIGN.md section 7): nothing is
-- written; the client reads the queue's record again and pushes to the live shards
if not QUIET and call('EXISTS', K_RETIRED) == 1 then
  return redis.error_reply(RETIRED_ERROR)
end
record_history(true)  -- this minute's history bucket (lua/_history.lua)
local front = A_FRONT == '1'
local delay = tonumber(A_DELAY_MS)
local expire = tonumber(A_EXPIRE_MS)
local fresh = A_FRESH == '1'
local item_prefix = ITEM_KEY_PREFIX
local added, flags, n, dups = {}, {}, 0, 0
if fresh then
  -- No key can exist for an id just made at random (128 bits): one MSET for all the data,
  -- instead of a SET NX per item that would always succeed.
  local kv = {}
  for i = REST, #ARGV, 2 do
    n = n + 1
    added[n] = ARGV[i]
    kv[2 * n - 1] = item_prefix .. ARGV[i]
    kv[2 * n] = ARGV[i + 1]
  end
  call_all('MSET', nil, kv)
  flags = {string.rep(PUSH_ADDED, n)}
else
  -- ids that are dead-lettered, in one ZMSCORE (skipped when there are no dead letters)
  local dead = {}
  if not QUIET and call('EXISTS', K_DEAD) == 1 then
    local ids = {}
    for i = REST, #ARGV, 2 do ids[#ids + 1] = ARGV[i] end
    dead = call('ZMSCORE', K_DEAD, unpack(ids))
  end
  -- ids completed within the de-dup window (skipped when nothing is remembered)
  local recent = {}
  if not QUIET and call('EXISTS', K_DEDUP) == 1 then
    local ids = {}
    for i = REST, #ARGV, 2 do ids[#ids + 1] = ARGV[i] end
    recent = call('ZMSCORE', K_DEDUP, unpack(ids))
    prune_dedup(DEDUP_PRUNE) -- (a few ids whose time is over: complete forgets more)
  end
  for i = REST, #ARGV, 2 do
    local id = ARGV[i]
    local k = (i - REST) / 2 + 1
    local until_ms = recent[k]
    if dead[k] then
      dups = dups + 1
      flags[k] = PUSH_DEAD
    elseif until_ms and tonumber(until_ms) > NOW then
      dups = dups + 1
      flags[k] = PUSH_RECENTLY_COMPLETED
    elseif call('SET', item_prefix .. id, ARGV[i + 1], 'NX') then
      n = n + 1
      added[n] = id
      flags[(i - REST) / 2 + 1] = PUSH_ADDED
    else
      dups = dups + 1
      flags[(i - REST) / 2 + 1] = PUSH_DUPLICATE
    end
  end
end

if n > 0 and not fresh then
  -- A reused id (its earlier item completed by a peer client, which knows nothing of
  -- rq-cli's keys) starts afresh: no leftover lease, attempts, error or sightings.
  local stale = {}
  for i, id in ipairs(added) do
    stale[2 * i - 1] = lease_key(id)
    stale[2 * i] = lbs_key(id)
  end
  call_all('DEL', nil, stale)
  batch_move(added, B.COMPLETED) -- (its earlier item, in a batch, counts completed there)
  drop_metas(added, QUIET) -- (its push time is written again below)
end
if n > 0 then
  -- HSET/ZADD/LPUSH with many arguments: one command per kind, not one per item.
  local stamped, now = {}, tostring(NOW)
  for i, id in ipairs(unstamped(added, NOW)) do
    stamped[2 * i - 1] = id
    stamped[2 * i] = now
  end
  if #stamped > 0 then call_all('HSET', K_ENQUEUED, stamped) end
  if expire > 0 then zadd_after(K_EXPIRES, added, expire) end
  -- fair: KEYS[2], if given, is a tenant's sub-queue: the items go there (_fair.lua)
  local line = tenant_pushed(added, delay <= 0)
  if A_AFTER ~= '' and batch_hold_items(added, A_AFTER, A_AFTER_MODE) then -- (_batch.lua)
  elseif delay > 0 then
    zadd_after(K_DELAYED, added, delay)
  elseif front then
    call_all('RPUSH', line, added)
  else
    call_all('LPUSH', line, added)
  end
  -- (delayed: one token, so that a waiting client leases again and learns when the first
  -- falls due, instead of at the end of its wait's chunk)
  wake_waiters(delay <= 0 and n or 1)
  if A_BATCH ~= '' then
    batch_join(added, A_BATCH, delay > 0 and S_DELAYED or S_PENDING, A_BATCH_TTL_MS)
  end
end
count(C_PUSHED, n)
count(C_DUPLICATES, dups)
return table.concat(flags)
