-- batch_sweep: one page of P:item_batch (HSCAN from A_CURSOR, about A_COUNT entries): an
-- entry whose item is gone (no data, not dead) was completed by a peer client, which knows
-- nothing of batches: batch_move counts it completed, so its batch finishes (clean runs this
-- over the whole hash, page by page; docs/DESIGN.md section 8).
-- Returns {the next cursor ("0": the end), the entries counted completed}.
--@uses batch_move item_key wrong_type
do local bad = wrong_type(); if bad then return bad end end
local got = redis.call('HSCAN', K_ITEM_BATCH, A_CURSOR, 'COUNT', A_COUNT)
local gone, page = {}, got[2]
for i = 1, #page, 2 do
  local id = page[i]
  if redis.call('EXISTS', item_key(id)) == 0 and not redis.call('ZSCORE', K_DEAD, id) then
    gone[#gone + 1] = id
  end
end
batch_move(gone, B.COMPLETED)
return {got[1], #gone}
