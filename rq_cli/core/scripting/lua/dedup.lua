-- dedup: the queue's de-dup window. Completed ids are remembered in P:dedup
-- (id -> when forgotten, ms) by complete while P:counters has F_DEDUP_WINDOW; push refuses
-- them meanwhile ("recently completed").
-- A_MODE mode:
--   "set": ARGV[REST] window in ms ("0" = no window: stop remembering, forget every id), then
--          forget up to PRUNE_BATCH expired ids (clean forgets the rest); returns how many
--   "list": ARGV[REST] offset, ARGV[REST + 1] count; returns {window_ms or -1, now_ms, remembered,
--          id1, until1, ...} (ids still remembered, soonest forgotten first)
--   "clear": forget ARGV[REST..] ids; returns how many were remembered
-- the definitions of _common.lua and _fair.lua this script names (scripts.py checks):
--@uses NOW prune_dedup wrong_type
local mode = A_MODE
if mode == 'list' then
  local out = {tonumber(redis.call('HGET', K_COUNTERS, F_DEDUP_WINDOW)) or -1, NOW,
               redis.call('ZCOUNT', K_DEDUP, '(' .. NOW, '+inf')}
  local got = redis.call('ZRANGEBYSCORE', K_DEDUP, '(' .. NOW, '+inf', 'WITHSCORES', 'LIMIT',
                         tonumber(ARGV[REST]), tonumber(ARGV[REST + 1]))
  for i = 1, #got do out[#out + 1] = got[i] end
  return out
end
do local bad = wrong_type(); if bad then return bad end end
local PRUNE_BATCH = 1000
if mode == 'set' then
  local window = tonumber(ARGV[REST])
  if window > 0 then
    redis.call('HSET', K_COUNTERS, F_DEDUP_WINDOW, window)
  else
    redis.call('HDEL', K_COUNTERS, F_DEDUP_WINDOW)
    redis.call('UNLINK', K_DEDUP)
  end
  return (prune_dedup(PRUNE_BATCH))
elseif mode == 'clear' then
  local ids = {}
  for i = REST, #ARGV do ids[#ids + 1] = ARGV[i] end
  if #ids == 0 then return 0 end
  local n = 0
  for i = 1, #ids, 1000 do
    n = n + redis.call('ZREM', K_DEDUP, unpack(ids, i, math.min(i + 999, #ids)))
  end
  return n
end
return redis.error_reply('dedup: unknown mode ' .. tostring(mode))
