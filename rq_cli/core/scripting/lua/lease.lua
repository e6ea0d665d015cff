-- lease: take up to `count` items from the right of P:queue into P:processing, each with a
-- lease held by `session`; all in one step, so no id is ever in processing without a lease.
-- Due delayed items are promoted first. Ghost ids (no data) are dropped; a second copy of an
-- id whose lease is held is dropped; expired items and items that have used max_attempts
-- are dead-lettered.
-- Arguments (scripts.py SPECS): A_COUNT, A_LEASE_MS, A_SESSION, A_MAX_ATTEMPTS (0 =
-- unlimited), A_AT_MOST_ONCE ("1": complete each item as it is taken: its data is returned
-- and the item deleted in the same step; a worker that dies loses the job, by request);
-- from ARGV[REST], pairs id, session: items to complete first, in the same step (a worker's
-- loop: finish the last item, take the next, in one round trip).
-- Returns {status, deadline_ms, next_due_ms, completions, id1, data1, attempt1, then item 1's
--   fields (fields.py: SPECS['lease'].rows), id2, ...}
--   status: LEASE_OK (possibly no items), LEASE_PAUSED, LEASE_FAIR (no items, on a fair
--   queue: a waiting client blocks on K_WAKE), LEASE_LIMITED, LEASE_CAPPED (no items: the
--   queue's rate is spent, or its in-flight cap reached: _limits.lua). next_due_ms: earliest
--   delayed item, or -1; held back by the limits: when the next lease can succeed.
--   completions: one character per item completed first, as complete.lua returns them.
-- the definitions of _common.lua and _fair.lua this script names (scripts.py checks):
--@uses NOW QUIET WRITE_V1 WRITE_V3 call_all complete_pairs count dead_letter drop_meta
--@uses forget_suspects item_key lbs_key lease_key lease_fields mget_leases promote_due
--@uses put_lease_fields put_lease_fields_of remember_completed take_ids wrong_type batch_move
--@uses LIMITED limit_room limit_took limit_freed
--@uses record_history batch_release_due ABSENT attempts_from
do local bad = wrong_type(); if bad then return bad end end
record_history()  -- this minute's history bucket (lua/_history.lua)
local lim = LIMITED -- (the queue's fleet-wide limits, or false: _limits.lua)
local completions = complete_pairs(REST)
-- (QUIET: none of the rare keys exists, so the queue is not paused, nothing is delayed, no
-- item has an expiry and clean has no sightings: their reads are skipped)
if not QUIET and redis.call('EXISTS', K_PAUSED) == 1 then
  return {LEASE_PAUSED, 0, -1, completions}
end
local want = tonumber(A_COUNT)
local ms = tonumber(A_LEASE_MS)
local px = tostring(ms) -- (SET's PX as text, made once: Lua formats a number on every call)
local deadline = tostring(NOW + ms) -- (P:leases' score, as text: see px)
local session = A_SESSION
local max_attempts = tonumber(A_MAX_ATTEMPTS)
local at_most_once = A_AT_MOST_ONCE == '1'
if lim then -- (the limits may admit fewer, or none: the status says when to come back)
  local room, status, at = limit_room(lim, want)
  if room == 0 then
    count(C_LIMITED, 1)
    return {status, NOW + ms, at, completions}
  end
  want = room
end
if not QUIET then promote_due(LEASE_LOOKAHEAD) end
-- (items push --after holds for a batch done, beyond what its finishing step released: a
-- bounded number go into the line here; a queue with none skips it: _batch.lua)
if not QUIET and not ABSENT[K_AFTERS] then batch_release_due() end
local out = {LEASE_OK, NOW + ms, -1, completions}
-- One item, on a queue with none of the rare keys (a worker's loop one item at a time): the
-- loop's steps for a plain pending item, without its tables. Any other id (no data, a held
-- copy, out of attempts) goes back where it was (the right end), for the loop below.
if QUIET and want == 1 and not at_most_once then
  local ids = redis.call('RPOP', K_QUEUE, 1)
  if not ids then return out end
  local id = ids[1]
  local v3_key, v1_key = lease_key(id), lbs_key(id)
  local got = redis.call('MGET', item_key(id), v3_key, v1_key)
  local attempts = tonumber(redis.call('HGET', K_ATTEMPTS, id)) or
    redis.call('HEXISTS', K_HOLDERS, id) -- (attempts_of, inline: this path is hot)
  if got[1] and not (WRITE_V3 and got[2]) and not (WRITE_V1 and got[3]) and
      (max_attempts <= 0 or attempts < max_attempts) then
    if WRITE_V3 then redis.call('SET', v3_key, session, 'PX', px) end
    if WRITE_V1 then redis.call('SET', v1_key, session, 'PX', px) end
    -- (a first attempt: its P:holders entry says it, attempts_of)
    if attempts > 0 then redis.call('HSET', K_ATTEMPTS, id, attempts + 1) end
    redis.call('LPUSH', K_PROCESSING, id)
    redis.call('ZADD', K_LEASES, deadline, id)
    redis.call('HSET', K_HOLDERS, id, session)
    count(C_LEASED, 1)
    out[5], out[6], out[7] = id, got[1], attempts + 1
    put_lease_fields_of(out, id)
    if lim then limit_took(lim, 1) end
    return out
  end
  redis.call('RPUSH', K_QUEUE, id)
end
local taken, looked = 0, 0
local limit = want + LEASE_LOOKAHEAD -- bounded: at most this many ids looked at per call
local has_expiry = not QUIET and redis.call('EXISTS', K_EXPIRES) == 1
local seen = {} -- ids leased by this call (a second copy in the same batch is dropped)
local leased, stamps, deadlines, holders = {}, {}, {}, {}
local done_at_once = {} -- (at most once) completed as taken: remembered by a de-dup window
while taken < want and looked < limit do
  -- A batch: its reads in a few multi-key commands, its writes gathered for after the loop.
  -- (fair: round-robin over the tenants with work, _fair.lua; else RPOP P:queue)
  local ids = take_ids(math.min(want - taken, limit - looked, 1000), lim)
  if not ids then break end
  looked = looked + #ids
  local item_keys, v3_keys, v1_keys = {}, {}, {}
  for k, id in ipairs(ids) do
    item_keys[k] = item_key(id)
    v3_keys[k] = lease_key(id)
    v1_keys[k] = lbs_key(id)
  end
  -- (the data and both lease keys of every id in one MGET)
  local v3, v1, datas = mget_leases(v3_keys, v1_keys, item_keys)
  local exps = has_expiry and redis.call('ZMSCORE', K_EXPIRES, unpack(ids)) or {}
  local atts = redis.call('HMGET', K_ATTEMPTS, unpack(ids))
  local held = redis.call('HMGET', K_HOLDERS, unpack(ids)) -- (attempts_from)
  local fields = lease_fields(ids) -- (fields.py: the fields lease carries)
  for k, id in ipairs(ids) do
    local data = datas[k]
    if not data then
      if not seen[id] then drop_meta(id) end
    elseif seen[id] or v3[k] or v1[k] then
      -- An item someone holds: normally a second copy, its first being in processing. If it
      -- is not there (a peer cleaner re-queued it between the holder's two lease steps), it
      -- goes there now, still the holder's, so the holder can complete it. (Rare; LPOS O(N).)
      if not seen[id] and not redis.call('LPOS', K_PROCESSING, id) then
        redis.call('LPUSH', K_PROCESSING, id)
      end
    else
      local exp = tonumber(exps[k])
      local attempts = attempts_from(atts[k], held[k])
      if exp and exp <= NOW then
        dead_letter(id, R_EXPIRED, nil, exp)
      elseif max_attempts > 0 and attempts >= max_attempts then
        dead_letter(id, R_MAX_ATTEMPTS)
      elseif at_most_once then
        redis.call('DEL', item_key(id))
        drop_meta(id)
        count(C_COMPLETED, 1)
        done_at_once[#done_at_once + 1] = id
        taken = taken + 1
        out[#out + 1] = id
        out[#out + 1] = data
        out[#out + 1] = attempts + 1
        put_lease_fields(out, fields, k)
      else
        seen[id] = true
        taken = taken + 1
        leased[#leased + 1] = id
        if attempts > 0 then -- (a first attempt: its P:holders entry says it)
          stamps[#stamps + 1] = id
          stamps[#stamps + 1] = attempts + 1
        end
        deadlines[#deadlines + 1] = deadline
        deadlines[#deadlines + 1] = id
        holders[#holders + 1] = id
        holders[#holders + 1] = session
        if WRITE_V3 then redis.call('SET', v3_keys[k], session, 'PX', px) end
        if WRITE_V1 then redis.call('SET', v1_keys[k], session, 'PX', px) end
        out[#out + 1] = id
        out[#out + 1] = data
        out[#out + 1] = attempts + 1
        put_lease_fields(out, fields, k)
      end
    end
  end
end
if #leased > 0 then
  if #stamps > 0 then call_all('HSET', K_ATTEMPTS, stamps) end
  call_all('LPUSH', K_PROCESSING, leased)
  batch_move(leased, S_PROCESSING)
  call_all('ZADD', K_LEASES, deadlines)
  call_all('HSET', K_HOLDERS, holders)
  if not QUIET then forget_suspects(leased) end
end
remember_completed(done_at_once)
count(C_LEASED, taken)
if lim then
  limit_took(lim, taken)
  limit_freed(lim, select(2, string.gsub(completions, O_COMPLETED, '')) - taken)
end
if taken == 0 and not QUIET then
  local first = redis.call('ZRANGE', K_DELAYED, 0, 0, 'WITHSCORES')
  if first[2] then out[3] = tonumber(first[2]) end
  -- fair (the queue has had tenants): a waiting client blocks on K_WAKE, not P:queue
  if redis.call('EXISTS', K_FAIR) == 1 then out[1] = LEASE_FAIR end
end
if taken == 0 and lim and lim.next then -- (fair: only tenants whose own rate is spent)
  out[1], out[3] = LEASE_LIMITED, lim.next
  count(C_LIMITED, 1)
end
return out
