-- complete: delete each item's data, lease, list entry and bookkeeping. Exactly one caller
-- per item gets "C": the one whose DEL removed the data key.
-- ARGV[4], ARGV[5], ... pairs id, session ("" = any). With a session, an item whose lease
-- another session holds is refused ("X"), so a worker whose lease expired cannot complete
-- work re-leased to someone else.
-- Returns a string, one character per id: C completed, M missing (not live), X conflict.
-- The leases are read in two MGETs and the bookkeeping dropped in a few multi-value commands
-- for the whole call; per item remain the DEL that decides and the LREM from processing.
do local bad = wrong_type(); if bad then return bad end end
local ids, v3_keys, v1_keys = {}, {}, {}
for i = 4, #ARGV, 2 do
  local id = ARGV[i]
  ids[#ids + 1] = id
  v3_keys[#v3_keys + 1] = lease_key(id)
  v1_keys[#v1_keys + 1] = lbs_key(id)
end
if #ids == 0 then return '' end
-- (the leases are read only when a session is given: without one, any caller may complete)
local any_session = false
for i = 5, #ARGV, 2 do
  if ARGV[i] ~= '' then any_session = true; break end
end
local v3 = (any_session and WRITE_V3) and redis.call('MGET', unpack(v3_keys)) or {}
local v1 = (any_session and WRITE_V1) and redis.call('MGET', unpack(v1_keys)) or {}
local res, done, lease_keys = {}, {}, {}
for k, id in ipairs(ids) do
  local session = ARGV[2 * k + 3]
  -- (as held_by_other: either key naming another session means a peer leased id again)
  local other = session ~= '' and not done[id] and
    ((v3[k] and v3[k] ~= session) or (v1[k] and v1[k] ~= session))
  if other then
    res[k] = 'X'
  elseif redis.call('DEL', item_key(id)) == 1 then
    done[id] = true
    unlist(id)
    lease_keys[#lease_keys + 1] = v3_keys[k]
    lease_keys[#lease_keys + 1] = v1_keys[k]
    res[k] = 'C'
  else
    res[k] = 'M'
  end
end
local completed = #lease_keys / 2
if completed > 0 then
  local gone = {}
  for id in pairs(done) do gone[#gone + 1] = id end
  call_all('DEL', nil, lease_keys)
  drop('HDEL', K_ATTEMPTS, gone)
  drop('HDEL', K_ENQUEUED, gone)
  drop('HDEL', K_ERRORS, gone)
  forget_suspects(gone)
  drop('ZREM', K_EXPIRES, gone)
  drop('ZREM', K_LEASES, gone)
  count('completed', completed)
end
return table.concat(res)
