-- Definitions shared by the rq-cli scripts (see rq_cli/core/scripting/scripts.py, source).
--
-- KEYS[1]: P:queue, the one key declared, for routing on a cluster. Every other key is
--   derived from the prefix P (ARGV[1]) here and below; on a cluster P carries a hash tag,
--   so they all live in the slot of KEYS[1]. (Passing one key instead of fourteen saves
--   client and server time on every call.)
-- ARGV, common head:
--   1 prefix P
--   2 now in ms since the epoch, or "" to read the server's clock (TIME)
--   3 layout: "compat" | "v0.3" | "v0.1"
-- Each script's own arguments start at ARGV[4] (named in scripts.py SPECS).
-- Each script declares the definitions below that it names (--@uses lines, checked), and
-- gets those and what they name (rq_cli/core/scripting/scripts.py, source), after
-- the names generated from rq_cli/core/contract/keys.py FIXED_KEYS (PREFIX, K_QUEUE, ... K_SUSPECTS,
-- META_USUAL, META_RARE, UNLINKED_WHOLE, the per-item key helpers (item_key(id), lease_key(id),
-- lbs_key(id), dead_item_key(id): keys.py ITEM_KEY_HELPERS), the type check
-- wrong_type() and QUIET) and its named arguments (A_<NAME>, and REST: the index of the first
-- repeated argument). A definition marked --@lazy (off the hot paths) is made only when a
-- call first uses it: a function costs its closure on every call that defines it.

local NOW = tonumber(ARGV[2])
if not NOW then
  local t = redis.call('TIME')
  NOW = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local LAYOUT = ARGV[3]
local WRITE_V3 = LAYOUT ~= 'v0.1'
local WRITE_V1 = LAYOUT ~= 'v0.3'


-- redis.call(cmd, <head...>, <args...>) in chunks: Lua's unpack() overflows the C stack
-- past a few thousand values. `step` must keep field/value pairs together (even).
local function call_chunked(cmd, head, args, step) --@lazy
  step = step or UNPACK_CHUNK
  for i = 1, #args, step do
    local call = {cmd}
    for _, h in ipairs(head) do call[#call + 1] = h end
    for j = i, math.min(i + step - 1, #args) do call[#call + 1] = args[j] end
    redis.call(unpack(call))
  end
end

-- cmd [key] args... as one command (call_chunked past what unpack() can take)
local function call_all(cmd, key, args)
  if #args > UNPACK_CHUNK then
    call_chunked(cmd, key and {key} or {}, args)
  elseif key then
    redis.call(cmd, key, unpack(args))
  else
    redis.call(cmd, unpack(args))
  end
end

-- ZADD to zset `key` every id of `ids`, scored now + ms: one command (chunked past what
-- unpack() can take).
local function zadd_after(key, ids, ms)
  local args = {}
  for i, id in ipairs(ids) do
    args[2 * i - 1] = NOW + ms
    args[2 * i] = id
  end
  call_all('ZADD', key, args)
end

-- HDEL/ZREM members of a hash/zset. (No EXISTS guard: on a missing key HDEL/ZREM cost what
-- the EXISTS would, and on a present one the guard was a second call.)
local function drop(cmd, key, members)
  if #members > 0 then call_all(cmd, key, members) end
end

-- Forget clean's sightings of these ids (all kinds), if it has any at all.
local function forget_suspects(ids) --@lazy
  if #ids == 0 or redis.call('EXISTS', K_SUSPECTS) == 0 then return end
  local fields = {}
  for i, id in ipairs(ids) do
    fields[3 * i - 2] = SEEN_PROCESSING .. id
    fields[3 * i - 1] = SEEN_CLEANING .. id
    fields[3 * i] = SEEN_STRAY .. id
  end
  call_all('HDEL', K_SUSPECTS, fields)
end

local function count(field, n)
  -- (1, the usual step of a worker's loop, as text: Lua formats a number on every call)
  if n and n ~= 0 then redis.call('HINCRBY', K_COUNTERS, field, n == 1 and '1' or n) end
end

-- The session holding id's lease, or false. compat honours either lease key.
local function lease_holder(id) --@lazy
  local v = false
  if WRITE_V3 then v = redis.call('GET', lease_key(id)) end
  if not v and WRITE_V1 then v = redis.call('GET', lbs_key(id)) end
  return v
end

-- True if a session other than `session` holds a lease on id ("" = any session: never).
-- compat reads both keys: rq-cli writes the same session to both, a peer writes one, so a
-- key naming another session means a peer leased id again after `session` did (the peer's
-- light_clean can put a held item back in line): that session holds it no more.
local function held_by_other(id, session) --@lazy
  if session == '' then return false end
  local v3 = WRITE_V3 and redis.call('GET', lease_key(id))
  local v1 = WRITE_V1 and redis.call('GET', lbs_key(id))
  return (v3 and v3 ~= session) or (v1 and v1 ~= session) or false
end

-- Remaining lease time in ms (for adopting leases granted by peer clients), or -1.
local function lease_pttl(id) --@lazy
  local t = -1
  if WRITE_V3 then t = redis.call('PTTL', lease_key(id)) end
  if t < 0 and WRITE_V1 then t = redis.call('PTTL', lbs_key(id)) end
  return t
end

-- Attempts so far: P:attempts' field; with none, 1 if P:holders names a last holder (a first
-- lease writes no P:attempts field: its holder entry says it), else 0. Whatever drops the
-- holder of an item that stays (fail's del_lease) writes the field first (keep_attempts).
local function attempts_of(id) --@lazy
  local n = tonumber(redis.call('HGET', K_ATTEMPTS, id))
  if n then return n end
  return redis.call('HEXISTS', K_HOLDERS, id)
end
-- attempts_of for an item read in bulk: `n` its P:attempts field (false: none), `holder` its
-- P:holders value (false: none).
local function attempts_from(n, holder)
  return tonumber(n) or (holder and 1 or 0)
end
-- Write id's attempts as a P:attempts field when only its holder entry says them (1), before
-- that entry goes while the item stays.
local function keep_attempts(id) --@lazy
  if not redis.call('HGET', K_ATTEMPTS, id) and redis.call('HEXISTS', K_HOLDERS, id) == 1 then
    redis.call('HSET', K_ATTEMPTS, id, '1')
  end
end

local function set_lease(id, session, ms) --@lazy
  if WRITE_V3 then redis.call('SET', lease_key(id), session, 'PX', ms) end
  if WRITE_V1 then redis.call('SET', lbs_key(id), session, 'PX', ms) end
  redis.call('ZADD', K_LEASES, NOW + ms, id)
  redis.call('HSET', K_HOLDERS, id, session)
end

local function del_lease(id) --@lazy
  redis.call('DEL', lease_key(id), lbs_key(id))
  redis.call('ZREM', K_LEASES, id)
  redis.call('HDEL', K_HOLDERS, id)
end

-- Forget that clean has seen id without a lease. P:suspects fields name the kind of
-- sighting: "p:<id>" in processing, "c:<id>" in the v0.1 cleaning journal, "d:<id>" stray.
local function forget_suspect(id) --@lazy
  redis.call('HDEL', K_SUSPECTS, SEEN_PROCESSING .. id, SEEN_CLEANING .. id, SEEN_STRAY .. id)
end

-- drop_meta for many ids, in one multi-value command per bookkeeping key. `quiet` (QUIET,
-- passed only by a script that has not written a rare key yet) skips the rare keys, which
-- then do not exist.
local function drop_metas(ids, quiet)
  for _, e in ipairs(META_USUAL) do drop(e[1], e[2], ids) end
  if quiet then return end
  for _, e in ipairs(META_RARE) do drop(e[1], e[2], ids) end
  forget_suspects(ids)
end

-- Forget rq-cli's bookkeeping of an item that no longer exists (every per-item key of
-- keys.py FIXED_KEYS with role "meta", and clean's sightings).
local function drop_meta(id) --@lazy
  batch_move({id}, B.COMPLETED) -- (an item gone: completed, by a peer or at most once)
  for _, e in ipairs(META_USUAL) do redis.call(e[1], e[2], id) end
  for _, e in ipairs(META_RARE) do redis.call(e[1], e[2], id) end
  forget_suspect(id)
end

-- Put a live id back in line: the back (LPUSH, as peers do) or the front (RPUSH).
-- (fair: into the item's tenant sub-queue, if it has a tenant: _fair.lua line_of)
local function enqueue(id, front) --@lazy
  local line = line_of(id)
  batch_move({id}, S_PENDING)
  if front then redis.call('RPUSH', line, id) else redis.call('LPUSH', line, id) end
  wake_waiters(1)
end

-- The LREM count that searches processing from the end id is likely near: '1' (from the
-- left, the newest leases) when its lease deadline (P:leases) is nearer the left end's than
-- the right end's, else '-1' (the right, the oldest; also when a deadline is unknown: a
-- peer's lease). Three O(1) reads. (A lease extended far past its neighbours' is looked for
-- from the wrong end: as before, one scan of the list.)
local function nearer_end(at, left, right)
  if at and left and right and math.abs(left - at) < math.abs(at - right) then return '1' end
  return '-1'
end
-- The lease deadlines (P:leases) of id and of the ids at processing's left and right ends.
local function ends_deadlines(id)
  local d = redis.call('ZMSCORE', K_LEASES, id, redis.call('LINDEX', K_PROCESSING, 0) or '',
    redis.call('LINDEX', K_PROCESSING, -1) or '')
  return tonumber(d[1]), tonumber(d[2]), tonumber(d[3])
end
local function near_end(id)
  return nearer_end(ends_deadlines(id))
end

-- Take id out of processing, or else out of the delayed set or the queue (re-queued meanwhile).
-- Every copy leaves processing (a peer client decides "completed" by its own LREM there, so
-- no copy may stay behind); the queue is searched only when the id was in neither of the
-- others (rare: its lease expired and a cleaner re-queued it).
-- LREM from the right (count -1) stops at the first copy found: leases LPUSH, so the oldest
-- leases sit at the right end and completing in roughly lease order costs the same whatever
-- the number of items in flight (count 0 would scan the whole list on every call). A list
-- longer than UNLIST_SHORT is searched from the end the id is likely near (near_end), so
-- settling the newest leases of a long list costs no more. A second copy of the id (only
-- when two clients leased it at once) stays behind as a ghost, with no data, and light clean
-- drops it. `from`: the LREM count to use, where the caller chose it (unlist_all).
-- Returns true if id was in one of the three (false: in none, as when a peer's complete of
-- the first generation, which decides by its own LREM from processing, has just taken it).
local function unlist(id, from)
  if not from then
    from = redis.call('LLEN', K_PROCESSING) > UNLIST_SHORT and near_end(id) or '-1'
  end
  return redis.call('LREM', K_PROCESSING, from, id) > 0 or redis.call('ZREM', K_DELAYED, id) > 0
    or redis.call('LREM', K_QUEUE, 1, id) > 0
end

-- unlist every id of `ids` (each once, each just completed, in the order completed). A
-- batch leased together sits in processing as one run (one LPUSH), its first id rightmost:
-- when the ids are exactly such a run, one LTRIM cuts the run and what is right of it, and
-- one RPUSH puts the latter back (at most UNPACK_CHUNK ids moved; none when the run is the
-- right end, a batch completed oldest first). Per id that is the copy unlist's LREM would
-- take, or another copy of the same id. Else one unlist each; in a list longer than
-- UNLIST_SHORT, the ids near its left end (the newest leases) from the leftmost of the
-- first and the last given: given in lease order, as lease returns them, or against it,
-- each is then the leftmost when its LREM looks. Returns the set of the ids found in no list
-- (see unlist), or nil when there is none.
local function unlist_all(ids)
  local n = #ids
  if n > 1 then
    -- (the index from the left of the rightmost copy of the first id)
    local at = redis.call('LPOS', K_PROCESSING, ids[1], 'RANK', -1, 'MAXLEN', UNPACK_CHUNK + 1)
    if at and at >= n - 1 then
      local run = redis.call('LRANGE', K_PROCESSING, at - n + 1, -1)
      local left = {}
      for _, id in ipairs(ids) do left[id] = true end
      local all = true
      for k = 1, n do
        if not left[run[k]] then all = false; break end
        left[run[k]] = nil -- (each once)
      end
      if all then
        if at == n - 1 then redis.call('DEL', K_PROCESSING)
        else redis.call('LTRIM', K_PROCESSING, 0, at - n) end
        if #run > n then redis.call('RPUSH', K_PROCESSING, unpack(run, n + 1)) end
        return nil
      end
    end
  end
  local absent
  local function take(id, from)
    if not unlist(id, from) then
      absent = absent or {}
      absent[id] = true
    end
  end
  if redis.call('LLEN', K_PROCESSING) <= UNLIST_SHORT then
    for _, id in ipairs(ids) do take(id, '-1') end
    return absent
  end
  -- (the ends' deadlines read once for the batch, the ids' in one ZMSCORE per chunk)
  local _, first, last = ends_deadlines('')
  local left = {}
  for c = 1, n, UNPACK_CHUNK do
    local chunk = {unpack(ids, c, math.min(c + UNPACK_CHUNK - 1, n))}
    local ats = redis.call('ZMSCORE', K_LEASES, unpack(chunk))
    for k, id in ipairs(chunk) do
      if nearer_end(tonumber(ats[k]), first, last) == '1' then left[#left + 1] = id
      else take(id, '-1') end
    end
  end
  -- (those near the left end from the one that is leftmost now, the first or the last
  -- given: ids given in or against lease order are each the leftmost when their LREM looks)
  if #left > 1 and redis.call('LINDEX', K_PROCESSING, 0) == left[1] then
    for _, id in ipairs(left) do take(id, '1') end
  else
    for k = #left, 1, -1 do take(left[k], '1') end
  end
  return absent
end

-- Move a live item to the dead letters. The caller has taken id out of every list.
-- Returns false if the item no longer exists.
local function dead_letter(id, reason, err, at) --@lazy
  local data = redis.call('GET', item_key(id))
  if not data then return false end
  at = at or NOW -- (expired: when it expired, not when a lease noticed it)
  local attempts = attempts_of(id)
  if not err or err == '' then err = redis.call('HGET', K_ERRORS, id) end
  redis.call('SET', dead_item_key(id), data)
  redis.call('DEL', item_key(id))
  del_lease(id)
  redis.call('ZADD', K_DEAD, at, id)
  local info = {reason = reason, attempts = attempts, at = at / 1000}
  if err then info.error = err end
  -- when it was first pushed (a P:enqueued stamp goes with the rest of its bookkeeping
  -- below); requeue-dead stamps a new time, purge drops it with the dead_info entry
  local enqueued = enqueued_ms(id)
  if enqueued then info.enqueued = enqueued / 1000 end
  info.tenant = redis.call('HGET', K_ITEM_TENANT, id) or nil -- fair: requeue-dead reads it
  redis.call('HSET', K_DEAD_INFO, id, cjson.encode(info))
  batch_move({id}, S_DEAD)
  drop_meta(id)
  count(C_DEAD, 1)
  if reason == R_EXPIRED then count(C_EXPIRED, 1) end
  return true
end

-- Move up to `limit` due delayed items to the queue. Returns how many were moved, and
-- whether more are due.
local function promote_due(limit) --@lazy
  local ids = redis.call('ZRANGEBYSCORE', K_DELAYED, '-inf', NOW, 'LIMIT', 0, limit)
  local moved = 0
  for _, id in ipairs(ids) do
    redis.call('ZREM', K_DELAYED, id)
    if redis.call('EXISTS', item_key(id)) == 1 then
      enqueue(id) -- (fair: to its tenant)
      moved = moved + 1
    else
      drop_meta(id)
    end
  end
  return moved, #ids == limit
end

-- Attempts so far; at or past max_attempts (0 = unlimited) the item is not leased again.
local function exhausted(id, max_attempts) --@lazy
  if max_attempts <= 0 then return false end
  return attempts_of(id) >= max_attempts
end

-- True if live item id has never been leased: no attempts recorded, no lease held and not in
-- processing (a peer's lease, or one that expired, leaves it there). Called only for ids
-- with no attempts and no lease read, so the LPOS (O(in flight)) runs off the hot path.
local function never_leased(id) --@lazy
  if lease_holder(id) then return false end
  if redis.call('EXISTS', item_key(id)) == 0 then return false end
  return not redis.call('LPOS', K_PROCESSING, id, 'RANK', -1)
end

-- "Z" if id is dead-lettered, else "M" (missing): the outcome for an id that is not live.
local function not_live(id) --@lazy
  if redis.call('ZSCORE', K_DEAD, id) then return O_ALREADY_DEAD end
  return O_MISSING
end

-- The values of the lease keys v3_keys[k] and v1_keys[k] (per the layout) in one MGET:
-- returns two lists indexed like the keys (false where absent or not written by the layout).
local function mget_leases(v3_keys, v1_keys, extra)
  local keys, per = {}, 0
  if extra then per = per + 1 end
  if WRITE_V3 then per = per + 1 end
  if WRITE_V1 then per = per + 1 end
  for k = 1, #v3_keys do
    local j = per * (k - 1)
    if extra then j = j + 1; keys[j] = extra[k] end
    if WRITE_V3 then j = j + 1; keys[j] = v3_keys[k] end
    if WRITE_V1 then j = j + 1; keys[j] = v1_keys[k] end
  end
  local vals = redis.call('MGET', unpack(keys))
  local v3, v1, ex = {}, {}, {}
  for k = 1, #v3_keys do
    local j = per * (k - 1)
    if extra then j = j + 1; ex[k] = vals[j] end
    if WRITE_V3 then j = j + 1; v3[k] = vals[j] end
    if WRITE_V1 then j = j + 1; v1[k] = vals[j] end
  end
  return v3, v1, ex
end

-- One page of processing and what is known of each lease: from `offset` (from the right end,
-- the oldest lease first) up to `n` ids, oldest first, with per id (lists indexed alike) the
-- lease keys' values per the layout (v3, v1: false where absent), the session rq-cli granted
-- it to last (P:holders) and its P:leases deadline. Four multi-key reads (holders, stats).
local function processing_page(offset, n) --@lazy
  local got = redis.call('LRANGE', K_PROCESSING, -(offset + n), -(offset + 1))
  local ids = {}
  for i = #got, 1, -1 do ids[#ids + 1] = got[i] end
  if #ids == 0 then return ids, {}, {}, {}, {} end
  local v3_keys, v1_keys = {}, {}
  for k, id in ipairs(ids) do
    v3_keys[k] = lease_key(id)
    v1_keys[k] = lbs_key(id)
  end
  local v3, v1 = mget_leases(v3_keys, v1_keys)
  return ids, v3, v1, redis.call('HMGET', K_HOLDERS, unpack(ids)),
    redis.call('ZMSCORE', K_LEASES, unpack(ids))
end

-- Live leases rq-cli has no live record of (a peer's: peers never write P:leases), in one
-- page of processing (processing_page): ids whose lease key exists while their P:leases
-- deadline is absent or past and the key names another session than the one rq-cli granted
-- it to (a lease of rq-cli's own runs out by its P:leases deadline, as `stats` counts it).
-- Returns that count and how many ids the page had (stats, peer_leases.lua; limits.py
-- LEASED_PAGE).
local function peer_leases(offset, n) --@lazy
  local ids, v3, v1, granted, deadlines = processing_page(offset, n)
  local found = 0
  for k = 1, #ids do
    local at, session = tonumber(deadlines[k]), v3[k] or v1[k]
    if session and (not at or at <= NOW) and session ~= granted[k] then found = found + 1 end
  end
  return found, #ids
end

-- Forget up to `limit` ids of the de-dup window whose time is over. Returns how many, and
-- whether more may be left.
local function prune_dedup(limit) --@lazy
  local old = redis.call('ZRANGEBYSCORE', K_DEDUP, '-inf', NOW, 'LIMIT', 0, limit)
  if #old > 0 then call_all('ZREM', K_DEDUP, old) end
  return #old, #old == limit
end

-- The de-dup window: when the queue has one (F_DEDUP_WINDOW in P:counters, set
-- by push), remember these completed ids in P:dedup until now + window, so push refuses them
-- meanwhile. One HGET per call, and one ZADD for all the ids when there is a window; and
-- as many ids as it adds, plus DEDUP_PRUNE, of those whose time is over are forgotten, so
-- P:dedup holds about the ids of one window, clean or no clean.
local function remember_completed(ids)
  if #ids == 0 then return end
  local window = tonumber(redis.call('HGET', K_COUNTERS, F_DEDUP_WINDOW))
  if window then
    zadd_after(K_DEDUP, ids, window)
    prune_dedup(#ids + DEDUP_PRUNE)
  end
end

-- History: snapshot the counters of HISTORY_FIELDS into P:history (this minute's bucket)
-- and P:history_hourly (this hour's), each only if the bucket has no snapshot yet (the
-- first caller of a bucket writes it, however many run), dropping the snapshots past
-- HISTORY_MINUTES / HISTORY_HOURS (each is dropped once: a call drops one, or after a
-- pause in snapshots the few that fell out meanwhile, HISTORY_MINUTES at most).
-- A queue that has counted nothing (no P:counters: a name typed wrong) gets no history.
-- Returns 1 if it wrote this minute's bucket, else 0.
local function snapshot_history() --@lazy
  local values, counted = nil, false
  local function snap(key, bucket, keep)
    if redis.call('ZCOUNT', key, bucket, bucket) > 0 then return 0 end
    if values == nil then
      values = redis.call('HMGET', K_COUNTERS, unpack(HISTORY_FIELDS))
      for i = 1, #HISTORY_FIELDS do
        counted = counted or values[i] ~= false
        values[i] = tonumber(values[i]) or 0
      end
    end
    if not counted then return 0 end
    redis.call('ZADD', key, bucket, bucket .. ':' .. table.concat(values, ':'))
    redis.call('ZREMRANGEBYSCORE', key, '-inf', '(' .. (bucket - keep))
    return 1
  end
  local wrote = snap(K_HISTORY, math.floor(NOW / 60000), HISTORY_MINUTES)
  snap(K_HISTORY_HOURLY, math.floor(NOW / 3600000), HISTORY_HOURS)
  return wrote
end

-- A v0.1 peer's complete decides by its own LREM from processing, then deletes the data;
-- its light_clean takes an id it judged abandoned out of processing (journalled in
-- P:cleaning), then pushes it back to the queue. Either may act on an id that an rq-cli
-- worker holds now (a stale worker's late complete; a light_clean's earlier sighting).
-- peer_took(id), for an id the holder's complete found in no list (unlist): "M" when a
-- peer's complete took it (that one counts; it deletes the data), "X" when a light_clean is
-- putting it back in line (the holder lost it: the item, data and all, is leased again),
-- nil where the layout has no v0.1 peers.
local function peer_took(id)
  if not WRITE_V1 then return nil end
  return redis.call('LPOS', K_CLEANING, id) and O_CONFLICT or O_MISSING
end

-- complete_pairs for one pair, id and session ("" = any): the same outcomes, without its
-- tables (a worker's loop one item at a time). Returns the outcome's character. The
-- holder's complete takes the id out of its list before the DEL: an id in none is a v0.1
-- peer's (peer_took), and its data stays for that peer.
local function complete_one(id, session)
  local v3_key, v1_key = lease_key(id), lbs_key(id)
  local v3, v1 = false, false
  if session ~= '' then
    local v = redis.call('MGET', v3_key, v1_key)
    v3, v1 = WRITE_V3 and v[1], WRITE_V1 and v[2]
    if (v3 and v3 ~= session) or (v1 and v1 ~= session) then return O_CONFLICT end
  end
  if not v3 and not v1 and attempts_of(id) == 0 and never_leased(id) then
    return O_NOT_LEASED
  end
  local held = (v3 and 1 or 0) + (v1 and 1 or 0)
  local listed = false
  if held > 0 then
    listed = unlist(id)
    if not listed then
      local took = peer_took(id)
      if took then return took end
    end
  end
  -- (as complete_pairs: with both leases read, one DEL, which removed the data if it
  -- removed more keys than the MGET found leases)
  if session ~= '' and WRITE_V3 and WRITE_V1 then
    if redis.call('DEL', item_key(id), v3_key, v1_key) <= held then return not_live(id) end
  else
    if redis.call('DEL', item_key(id)) == 0 then return not_live(id) end
    redis.call('DEL', v3_key, v1_key)
  end
  if held == 0 then unlist(id) end
  if QUIET then
    for _, e in ipairs(META_USUAL) do redis.call(e[1], e[2], id) end
  else
    batch_move({id}, B.COMPLETED)
    drop_metas({id})
  end
  remember_completed({id})
  count(C_COMPLETED, 1)
  return O_COMPLETED
end

-- Complete the items named by pairs id, session ("" = any) in ARGV[first], ARGV[first + 1],
-- ... Returns a string, one character per pair: "C" completed (this call's DEL removed the
-- data: the one successful complete; with a session, only if the id was in a list: see
-- peer_took), "M" missing (not live, or a peer's complete took it first), "Z" dead (not live: the id is
-- dead-lettered), "N" not leased (a live item that was never leased: left as it is; purge
-- deletes items that no worker took), "X" conflict (given a session, another session holds
-- the lease: see held_by_other). The leases are read in two
-- MGETs and the bookkeeping dropped in a few multi-value commands for all the pairs; per
-- item remain the DEL that decides and, unless the completed ids are one run in processing
-- (unlist_all), the LREM from processing. One pair: complete_one.
local function complete_pairs(first)
  if #ARGV == first + 1 then return complete_one(ARGV[first], ARGV[first + 1]) end
  local ids, v3_keys, v1_keys = {}, {}, {}
  local any_session = false
  for i = first, #ARGV, 2 do
    local id = ARGV[i]
    ids[#ids + 1] = id
    v3_keys[#v3_keys + 1] = lease_key(id)
    v1_keys[#v1_keys + 1] = lbs_key(id)
    if ARGV[i + 1] ~= '' then any_session = true end
  end
  if #ids == 0 then return '' end
  -- (the leases are read only when a session is given: without one, any caller may complete;
  -- both lease keys of every id in one MGET)
  local v3, v1 = {}, {}
  if any_session then v3, v1 = mget_leases(v3_keys, v1_keys) end
  -- attempts, for the "never leased" check, only of the ids with no lease read (one HMGET)
  local unleased, atts = {}, {}
  for k, id in ipairs(ids) do
    if not v3[k] and not v1[k] then unleased[#unleased + 1] = id end
  end
  if #unleased > 0 then
    local vals = redis.call('HMGET', K_ATTEMPTS, unpack(unleased))
    local held = redis.call('HMGET', K_HOLDERS, unpack(unleased)) -- (attempts_from)
    for k, id in ipairs(unleased) do
      if attempts_from(vals[k], held[k]) > 0 then atts[id] = true end
    end
  end
  local res, done, lease_keys, gone = {}, {}, {}, {}
  -- the holder's complete takes its ids out of their lists before the DELs, as
  -- complete_one: an id in none is a v0.1 peer's (peer_took), and its data stays
  -- (as held_by_other: either key naming another session means a peer leased id again)
  local took, held_ids, seen, others = {}, {}, {}, {}
  for k, id in ipairs(ids) do
    local session = ARGV[first + 2 * k - 1]
    others[k] = session ~= '' and
      ((v3[k] and v3[k] ~= session) or (v1[k] and v1[k] ~= session))
    if session ~= '' and (v3[k] or v1[k]) and not others[k] and not seen[id] then
      seen[id] = true
      held_ids[#held_ids + 1] = id
    end
  end
  if #held_ids > 0 then
    local absent = unlist_all(held_ids)
    if absent then
      for id in pairs(absent) do took[id] = peer_took(id) end
    end
  end
  -- (compat with the leases read: both lease keys known, so one DEL per item; see below)
  local one_del = any_session and WRITE_V3 and WRITE_V1
  for k, id in ipairs(ids) do
    if others[k] and not done[id] then
      res[k] = O_CONFLICT
    elseif took[id] then
      res[k] = took[id]
    elseif not done[id] and not v3[k] and not v1[k] and not atts[id] and never_leased(id) then
      res[k] = O_NOT_LEASED
    elseif one_del then
      -- the data and both lease keys in one DEL: it removed the data if it removed more
      -- keys than the MGET found leases (time stands still within a script: no lease key
      -- expires in between)
      local held = (v3[k] and 1 or 0) + (v1[k] and 1 or 0)
      if redis.call('DEL', item_key(id), v3_keys[k], v1_keys[k]) > held then
        done[id] = true
        gone[#gone + 1] = id
        res[k] = O_COMPLETED
      else
        res[k] = done[id] and O_MISSING or not_live(id)
      end
    elseif redis.call('DEL', item_key(id)) == 1 then
      done[id] = true
      gone[#gone + 1] = id
      lease_keys[#lease_keys + 1] = v3_keys[k]
      lease_keys[#lease_keys + 1] = v1_keys[k]
      res[k] = O_COMPLETED
    else
      res[k] = done[id] and O_MISSING or not_live(id)
    end
  end
  if #gone > 0 then
    -- (the ids completed with no lease of theirs held leave their lists now)
    local rest = {}
    for _, id in ipairs(gone) do
      if not seen[id] then rest[#rest + 1] = id end
    end
    if #rest > 0 then unlist_all(rest) end
    batch_move(gone, B.COMPLETED)
    if #lease_keys > 0 then call_all('DEL', nil, lease_keys) end
    drop_metas(gone, QUIET)
    remember_completed(gone)
    count(C_COMPLETED, #gone)
  end
  return table.concat(res)
end

-- The per-item fields (rq_cli/core/contract/fields.py ITEM_FIELDS, the one list of them): the hashes
-- each reply reads are generated from it (PEEK_FIELD_KEYS, LEASE_FIELD_KEYS, in its order).
-- Append to `out` item id's fields of peek, each from its hash, or false when not `live` (a
-- dead item's bookkeeping went when it died: its fields are in dead_info). The push time is
-- read by enqueued_ms (_ages.lua: a stamp, or the time the id carries).
local function put_item_fields(out, id, live)
  for _, key in ipairs(PEEK_FIELD_KEYS) do
    if not live then
      out[#out + 1] = false
    elseif key == K_ENQUEUED then
      out[#out + 1] = enqueued_ms(id) or false
    else
      out[#out + 1] = redis.call('HGET', key, id)
    end
  end
end

-- The lease fields of `ids`, a batch of leased items: a list per field of their values (HMGET,
-- false where none). A rare hash is not read when QUIET (then none exists).
local function lease_fields(ids)
  local got = {}
  for i, key in ipairs(LEASE_FIELD_KEYS) do
    got[i] = (QUIET and LEASE_FIELD_RARE[i]) and {} or redis.call('HMGET', key, unpack(ids))
  end
  return got
end

-- Append to `out` the lease fields of the k-th item of a batch read with lease_fields.
local function put_lease_fields(out, got, k)
  for i = 1, #got do out[#out + 1] = got[i][k] or false end
end

-- Append to `out` one leased item's lease fields (HGET each; see lease_fields).
local function put_lease_fields_of(out, id)
  for i, key in ipairs(LEASE_FIELD_KEYS) do
    out[#out + 1] = not (QUIET and LEASE_FIELD_RARE[i]) and redis.call('HGET', key, id)
  end
end
