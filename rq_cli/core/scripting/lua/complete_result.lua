-- complete_result: complete items as complete.lua does, each with a result, kept for a batch
-- item in its batch's P:results:<batch> (id -> result; docs/DESIGN.md section 8) when this
-- call completes it; an item in no batch completes as with complete.lua, its result dropped.
-- The result is written before the completion, so the step that finishes the batch sets it
-- to expire with the rest of the batch.
-- ARGV[REST..] triples id, session ("" = any), result (at most RESULT_MAX bytes: the caller
-- checks; "" = none: an item completed with no result, or a command that printed nothing).
-- Returns a string, one character per id, as complete.lua.
--@uses batch_of complete_one wrong_type
do local bad = wrong_type(); if bad then return bad end end
local out = {}
for i = REST, #ARGV, 3 do
  local id = ARGV[i]
  local name = ARGV[i + 2] ~= '' and batch_of(id)
  local key = name and batch_key(B.RESULTS, name)
  if key then redis.call('HSET', key, id, ARGV[i + 2]) end
  local code = complete_one(id, ARGV[i + 1])
  if key and code ~= O_COMPLETED then redis.call('HDEL', key, id) end
  out[#out + 1] = code
end
return table.concat(out)
