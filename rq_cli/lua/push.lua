-- push: add items; an item is added only if P:item:<id> does not exist (dedup by id).
-- ARGV[4] front: "1" = leased next (RPUSH), else the back of the line (LPUSH)
-- ARGV[5] delay in ms (0 = ready now; > 0 = goes to P:delayed, due at now + delay)
-- ARGV[6] expiry in ms after now (0 = never): not leased after that, dead-lettered as expired
-- ARGV[7], ARGV[8], ... pairs id, data (at most a few thousand pairs per call)
-- Returns a string with one character per item: "1" added, "0" duplicate.
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
  -- HSET/ZADD/LPUSH with many arguments: one command per kind, not one per item.
  redis.call('HSET', K_ENQUEUED, unpack(stamped))
  if expire > 0 then
    for i, id in ipairs(added) do
      due[2 * i - 1] = NOW + expire
      due[2 * i] = id
    end
    redis.call('ZADD', K_EXPIRES, unpack(due))
  end
  if delay > 0 then
    for i, id in ipairs(added) do
      due[2 * i - 1] = NOW + delay
      due[2 * i] = id
    end
    redis.call('ZADD', K_DELAYED, unpack(due))
  elseif front then
    redis.call('RPUSH', K_QUEUE, unpack(added))
  else
    redis.call('LPUSH', K_QUEUE, unpack(added))
  end
end
count('pushed', n)
count('duplicates', #flags - n)
return table.concat(flags)
