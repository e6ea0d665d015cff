-- batch_after: release the next B.AFTER_BATCH items that push --after holds for batch A_NAME
-- (P:after:<name>), once it finished, or once its record is gone (forgotten, expired): clean
-- runs it for a list longer than the finishing step released (docs/DESIGN.md section 8).
-- Returns 1 if more are left, else 0.
--@uses batch_release wrong_type
do local bad = wrong_type(); if bad then return bad end end
local g = redis.call('HMGET', batch_key(B.RECORD, A_NAME), B.TOTAL, B.FINISHED)
if g[1] and not g[2] then return 0 end -- (not done yet: its finishing step releases them)
return batch_release(A_NAME) and 1 or 0
