-- The age of an item without a stamp per item (rq_cli/core/contract/ages.py, docs/DESIGN.md
-- section 2): V7_PATTERN and ID_TIME_DIGITS are generated from ages.py.

-- The push time (ms) a v7-shaped id carries, or nil for any other id.
local function id_ms(id)
  if string.match(id, V7_PATTERN) then
    return tonumber(string.sub(id, 1, ID_TIME_DIGITS), 16)
  end
  return nil
end

-- An item's push time (ms): its P:enqueued stamp where it has one, else the time its id
-- carries, else nil (unknown: a peer's item). The one reader of a push time in Lua
-- (ages.py enqueued_ms is Python's).
local function enqueued_ms(id)
  return tonumber(redis.call('HGET', K_ENQUEUED, id)) or id_ms(id)
end

-- The ids of `ids` whose id does not carry their push time `at` (ms) within
-- PUSH_STAMP_SLACK_MS: those push writes a P:enqueued stamp for.
local function unstamped(ids, at)
  local out = {}
  for _, id in ipairs(ids) do
    local t = id_ms(id)
    if not t or math.abs(t - at) > PUSH_STAMP_SLACK_MS then out[#out + 1] = id end
  end
  return out
end
