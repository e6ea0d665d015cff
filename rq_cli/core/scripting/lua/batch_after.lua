-- batch_after: release the next B.AFTER_BATCH items that push --after holds for batch A_NAME
-- (P:after:<name>) (docs/DESIGN.md section 8). A_VERDICT "": clean's own pass, once the
-- batch finished, or once its record is gone (forgotten, expired), for a list longer than
-- the finishing step released; not a part that holds items for a sharded queue's whole
-- batch (B.WIDE). A_VERDICT "1"/"0": a sharded queue's client saw every part of the batch
-- done, with or without a dead item (core/operations/batchops.py release): this shard's part goes.
-- Returns 1 if more are left, else 0.
--@uses batch_release wrong_type
do local bad = wrong_type(); if bad then return bad end end
if A_VERDICT ~= '' then
  return batch_release(A_NAME, A_VERDICT, B.AFTER_BATCH) and 1 or 0
end
local g = redis.call('HMGET', batch_key(B.RECORD, A_NAME), B.TOTAL, B.FINISHED, B.WIDE)
if g[3] then return 0 end -- (a sharded queue's client releases them: the whole batch)
if g[1] and not g[2] then return 0 end -- (not done yet: its finishing step releases them)
return batch_release(A_NAME, nil, B.AFTER_BATCH) and 1 or 0
