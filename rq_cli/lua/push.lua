-- push: add items; an item is added only if P:item:<id> does not exist (dedup by id).
-- ARGV[4] front: "1" = leased next (RPUSH), else the back of the line (LPUSH)
-- ARGV[5] delay in ms (0 = ready now; > 0 = goes to P:delayed, due at now + delay)
-- ARGV[6] expiry in ms after now (0 = never): not leased after that, dead-lettered as expired
-- ARGV[7], ARGV[8], ... pairs id, data (at most a few thousand pairs per call)
-- Returns a string with one character per item: "1" added, "0" duplicate.
do local bad = wrong_type(); if bad then return bad end end
local front = ARGV[4] == '1'
local delay = tonumber(ARGV[5])
local expire = tonumber(ARGV[6])
local added, flags = {}, {}
for i = 7, #ARGV, 2 do
  local id = ARGV[i]
  if redis.call('SET', item_key(id), ARGV[i + 1], 'NX') then
    added[#added + 1] = id
    flags[#flags + 1] = '1'
  else
    flags[#flags + 1] = '0'
  end
end
local n = #added
if n > 0 then
  local stamped, due = {}, {}
  for i, id in ipairs(added) do
    stamped[2 * i - 1] = id
    stamped[2 * i] = NOW
  end
  -- A reused id (its earlier item completed by a peer client, which knows nothing of
  -- rq-cli's keys) starts afresh: no leftover lease, attempts, error or sightings.
  local stale, fields = {}, {}
  for i, id in ipairs(added) do
    stale[2 * i - 1] = lease_key(id)
    stale[2 * i] = lbs_key(id)
    fields[3 * i - 2] = 'p:' .. id
    fields[3 * i - 1] = 'c:' .. id
    fields[3 * i] = 'd:' .. id
  end
  call_chunked('DEL', {}, stale)
  call_chunked('HDEL', {K_ATTEMPTS}, added)
  call_chunked('HDEL', {K_ERRORS}, added)
  call_chunked('HDEL', {K_SUSPECTS}, fields)
  call_chunked('ZREM', {K_LEASES}, added)
  call_chunked('ZREM', {K_EXPIRES}, added)
  -- HSET/ZADD/LPUSH with many arguments: one command per kind, not one per item.
  call_chunked('HSET', {K_ENQUEUED}, stamped)
  if expire > 0 then
    for i, id in ipairs(added) do
      due[2 * i - 1] = NOW + expire
      due[2 * i] = id
    end
    call_chunked('ZADD', {K_EXPIRES}, due)
  end
  if delay > 0 then
    for i, id in ipairs(added) do
      due[2 * i - 1] = NOW + delay
      due[2 * i] = id
    end
    call_chunked('ZADD', {K_DELAYED}, due)
  elseif front then
    call_chunked('RPUSH', {K_QUEUE}, added)
  else
    call_chunked('LPUSH', {K_QUEUE}, added)
  end
end
count('pushed', n)
count('duplicates', #flags - n)
return table.concat(flags)
