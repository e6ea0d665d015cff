-- complete: delete each item's data, lease, list entry and bookkeeping. Exactly one caller
-- per item gets "C": the one whose DEL removed the data key.
-- ARGV[4], ARGV[5], ... pairs id, session ("" = any). With a session, an item whose lease
-- another session holds is refused ("X"), so a worker whose lease expired cannot complete
-- work re-leased to someone else.
-- Returns a string, one character per id: C completed, M missing (not live), X conflict.
do local bad = wrong_type(); if bad then return bad end end
local res = {}
local done = 0
for i = 4, #ARGV, 2 do
  local id, session = ARGV[i], ARGV[i + 1]
  local holder = lease_holder(id)
  if session ~= '' and holder and holder ~= session then
    res[#res + 1] = 'X'
  elseif redis.call('DEL', item_key(id)) == 1 then
    del_lease(id)
    unlist(id)
    drop_meta(id)
    done = done + 1
    res[#res + 1] = 'C'
  else
    res[#res + 1] = 'M'
  end
end
count('completed', done)
return table.concat(res)
