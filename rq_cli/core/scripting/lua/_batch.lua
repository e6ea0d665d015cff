-- Batches (docs/DESIGN.md section 8): the definitions the scripts share for them (read by
-- rq_cli/core/scripting/scripts.py with _common.lua; the table B (the record's fields B.TOTAL, ..., the
-- key families B.RECORD, B.WAKE, B.RESULTS, B.AFTER, the limits) and batch_key(family, name)
-- are generated from rq_cli/core/contract/batches.py).
-- K_ITEM_BATCH holds, for each live or dead batch item, "<state>:<batch>": the state its
-- batch counts it in (S_PENDING, S_PROCESSING, S_DELAYED, S_DEAD) and the batch's name, so a
-- move reads where an item was counted and every item is counted in exactly one state.
-- K_ITEM_BATCH is a rare key: a queue with no batch item has none, and a script whose QUIET
-- is set (none of its rare keys exists), or whose type check found it absent (ABSENT),
-- skips batch_move altogether: an item in no batch costs no command.

-- Batch `name` (record `key`) is open again (requeue-dead, a push): not finished, kept.
local function batch_reopen(key, name) --@lazy
  redis.call('HDEL', key, B.FINISHED)
  redis.call('PERSIST', key)
  redis.call('PERSIST', batch_key(B.RESULTS, name))
  redis.call('DEL', batch_key(B.WAKE, name))
end

-- Finish batch `name` if it has no open item and no push holds it open, or open it again
-- if it finished and has: the finishing step sets finished_ms, pushes the wake token
-- (rq-cli wait) and sets the batch's keys to expire after its ttl. Constant work.
local function batch_settle(name) --@lazy
  local key = batch_key(B.RECORD, name)
  local g = redis.call('HMGET', key, B.PENDING, B.PROCESSING, B.DELAYED, B.FINISHED,
    B.OPEN_UNTIL, B.TTL, B.WIDE)
  -- (a push stream's hold, lua/batch_hold.lua, keeps it open until its deadline)
  local open = (tonumber(g[1]) or 0) + (tonumber(g[2]) or 0) + (tonumber(g[3]) or 0) > 0 or
    (tonumber(g[5]) or 0) > NOW
  if open then
    if g[4] then batch_reopen(key, name) end
  elseif not g[4] then
    local wake, ttl = batch_key(B.WAKE, name), tonumber(g[6])
    redis.call('HSET', key, B.FINISHED, NOW)
    redis.call('DEL', wake)
    redis.call('RPUSH', wake, NOW)
    if ttl then
      redis.call('PEXPIRE', key, ttl)
      redis.call('PEXPIRE', wake, ttl)
      redis.call('PEXPIRE', batch_key(B.RESULTS, name), ttl)
    end
    -- (a shard's part that holds items for the whole batch, B.WIDE, leaves them to the
    -- client that sees every part done: core/operations/batchops.py release)
    if not g[7] and redis.call('SISMEMBER', K_AFTERS, name) == 1 then
      batch_release(name, nil, B.AFTER_BATCH)
    end
  end
end

-- Release the items push --after holds for finished batch `name` (P:after:<name>), up to
-- `limit` of them, oldest first: into the queue, or (B.AFTER_OK, the batch having a dead
-- item) into the dead letters, reason after_failed. `verdict` (a sharded queue's whole
-- batch: "1" it has a dead item, "0" none) stands for the record's own count, else nil.
-- Each entry is popped and placed in this one step, so an item is released exactly once.
-- Returns whether more are left (lease and clean release them); with none left, the name
-- leaves K_AFTERS and the record its B.WIDE (a part that held items only is gone).
local function batch_release(name, verdict, limit)
  local key, record = batch_key(B.AFTER, name), batch_key(B.RECORD, name)
  local got = redis.call('LPOP', key, limit) or {}
  local failed = verdict == '1' or
    (verdict == nil and (tonumber(redis.call('HGET', record, B.DEAD)) or 0) > 0)
  local ready = {}
  for _, e in ipairs(got) do
    local mode, id = string.sub(e, 1, 1), string.sub(e, 2)
    if redis.call('EXISTS', item_key(id)) == 1 then
      if mode == B.AFTER_OK and failed then
        dead_letter(id, R_AFTER_FAILED, 'batch ' .. name .. ' ended with a dead item')
      else
        ready[#ready + 1] = id
      end
    end
  end
  if #ready > 0 then
    call_all('LPUSH', K_QUEUE, ready)
    wake_waiters(#ready)
  end
  local more = redis.call('EXISTS', key) == 1
  if not more then
    redis.call('SREM', K_AFTERS, name)
    redis.call('HDEL', record, B.WIDE)
  end
  return more
end

-- lease.lua's step on a queue with items held by push --after (K_AFTERS; none: not called):
-- one batch named there, at random, if it finished or its record is gone (a list longer
-- than its finishing step released, a batch forgotten) and it is no sharded queue's part
-- (B.WIDE), has up to B.AFTER_LEASE of them released, so a worker need not wait for clean.
-- Bounded: an SRANDMEMBER, an HMGET and at most one release per lease.
local function batch_release_due() --@lazy
  local name = redis.call('SRANDMEMBER', K_AFTERS)
  if not name then return end
  local g = redis.call('HMGET', batch_key(B.RECORD, name), B.TOTAL, B.FINISHED, B.WIDE)
  if not g[3] and (g[2] or not g[1]) then batch_release(name, nil, B.AFTER_LEASE) end
end

-- push --after NAME (B.AFTER_ANY) or --after-ok NAME (B.AFTER_OK): new items `ids` wait for
-- batch `name`, held in P:after:<name>, in no list (peers never see them), until the step
-- that finishes the batch releases them. Returns true if it held (or, the batch having
-- finished with a dead item, dead-lettered) them; false: push them as usual (the batch is
-- done, or has no record). A mode in upper case (a shard of a sharded queue, whose client
-- saw the whole batch open) holds them whatever this part says, and marks the part B.WIDE:
-- the client that sees every part done releases them (core/operations/batchops.py release).
local function batch_hold_items(ids, name, mode) --@lazy
  local entries, lower = {}, string.lower(mode)
  if lower ~= mode then
    for i, id in ipairs(ids) do entries[i] = lower .. id end
    call_all('RPUSH', batch_key(B.AFTER, name), entries)
    redis.call('HSET', batch_key(B.RECORD, name), B.WIDE, 1)
    redis.call('SADD', K_AFTERS, name)
    return true
  end
  local g = redis.call('HMGET', batch_key(B.RECORD, name), B.TOTAL, B.FINISHED, B.DEAD)
  if not g[1] then return false end
  if g[2] then
    if mode ~= B.AFTER_OK or (tonumber(g[3]) or 0) == 0 then return false end
    for _, id in ipairs(ids) do
      dead_letter(id, R_AFTER_FAILED, 'batch ' .. name .. ' ended with a dead item')
    end
    return true
  end
  for i, id in ipairs(ids) do entries[i] = mode .. id end
  call_all('RPUSH', batch_key(B.AFTER, name), entries)
  redis.call('SADD', K_AFTERS, name)
  return true
end

-- The batch of live item id whose record exists, or nil (an item in no batch, or in one
-- forgotten).
local function batch_of(id) --@lazy
  if QUIET or ABSENT[K_ITEM_BATCH] then return nil end
  local v = redis.call('HGET', K_ITEM_BATCH, id)
  local name = v and string.match(v, '^[^:]*:(.*)$')
  if name and redis.call('EXISTS', batch_key(B.RECORD, name)) == 1 then return name end
  return nil
end

-- Batch `name` was just made: list it in K_BATCHES (the consoles' list), and drop the oldest
-- entry if its record is gone (expired, forgotten): one per batch made, so the list holds
-- about the batches that exist.
local function batch_listed(name) --@lazy
  redis.call('ZADD', K_BATCHES, NOW, name)
  local oldest = redis.call('ZRANGE', K_BATCHES, 0, 0)[1]
  if oldest and redis.call('EXISTS', batch_key(B.RECORD, oldest)) == 0 then
    redis.call('ZREM', K_BATCHES, oldest)
  end
end

-- New items `ids` join batch `name`, counted in `state` (push): one HSET of their entries
-- and a few commands on the record, made by the first push (created_ms, ttl_ms).
local function batch_join(ids, name, state, ttl_ms) --@lazy
  local key, entries, v = batch_key(B.RECORD, name), {}, state .. ':' .. name
  for i, id in ipairs(ids) do
    entries[2 * i - 1] = id
    entries[2 * i] = v
  end
  call_all('HSET', K_ITEM_BATCH, entries)
  redis.call('HINCRBY', key, B.TOTAL, #ids)
  redis.call('HINCRBY', key, state, #ids)
  if redis.call('HSETNX', key, B.CREATED, NOW) == 1 then batch_listed(name) end
  redis.call('HSETNX', key, B.TTL, ttl_ms)
  -- (a push stream holds it open: renewed by each of its calls)
  if redis.call('HEXISTS', key, B.OPEN_UNTIL) == 1 then
    redis.call('HSET', key, B.OPEN_UNTIL, NOW + B.OPEN_MS)
  end
  batch_settle(name)
end

-- Items `ids` (of any batch, or none) move to state `to` (S_PENDING, S_PROCESSING,
-- S_DELAYED, S_DEAD, B.COMPLETED; '' = out of their batch: purged, or moved to another
-- queue). One HMGET of their entries; for batch items, per batch touched, one HINCRBY per
-- count that changed and batch_settle, which finishes the batch when this move closed its
-- last open item. An entry whose batch was forgotten (batch --forget, its ttl) is dropped.
-- Called where an item changes state, before its bookkeeping goes (drop_meta).
local function batch_move(ids, to)
  if QUIET or ABSENT[K_ITEM_BATCH] or #ids == 0 then return end
  local per, names = {}, {}
  for i = 1, #ids, UNPACK_CHUNK do
    local part = {unpack(ids, i, math.min(i + UNPACK_CHUNK - 1, #ids))}
    local got = redis.call('HMGET', K_ITEM_BATCH, unpack(part))
    for k = 1, #part do
      local from, name = false, nil
      if got[k] then from, name = string.match(got[k], '^([^:]*):(.*)$') end
      -- (a dead item is not live: none completes it; a ghost dropped is never a dead id)
      if from and from ~= to and not (from == S_DEAD and to == B.COMPLETED) then
        local p = per[name]
        if not p then
          p = {ids = {}, delta = {}}
          per[name] = p
          names[#names + 1] = name
        end
        p.ids[#p.ids + 1] = part[k]
        p.delta[from] = (p.delta[from] or 0) - 1
        local f = to == '' and B.TOTAL or to
        p.delta[f] = (p.delta[f] or 0) + (to == '' and -1 or 1)
      end
    end
  end
  local set, del = {}, {}
  for _, name in ipairs(names) do
    local p = per[name]
    local live = redis.call('EXISTS', batch_key(B.RECORD, name)) == 1
    for _, id in ipairs(p.ids) do
      if live and to ~= '' and to ~= B.COMPLETED then
        set[#set + 1] = id
        set[#set + 1] = to .. ':' .. name
      else
        del[#del + 1] = id
      end
    end
    if live then
      for f, d in pairs(p.delta) do
        if d ~= 0 then redis.call('HINCRBY', batch_key(B.RECORD, name), f, d) end
      end
    else
      per[name] = nil
    end
  end
  if #del > 0 then call_all('HDEL', K_ITEM_BATCH, del) end
  if #set > 0 then call_all('HSET', K_ITEM_BATCH, set) end
  for _, name in ipairs(names) do
    if per[name] then batch_settle(name) end
  end
end
