-- tenants: a page of the ring of tenants with work, each with the length of its sub-queue
-- (fair queues, _fair.lua). Read-only; O(page), whatever the number of tenants.
-- A_OFFSET offset   A_SIZE page size
-- Returns {tenants (with work, the default tenant not counted), default_depth (LLEN P:queue),
--          tenant1, depth1, tenant2, depth2, ...} for ring entries offset .. offset + size - 1
-- (from the head: the next turn first), the default tenant left out.
-- the definitions of _common.lua and _fair.lua this script names (scripts.py checks):
--@uses tenant_key
local offset, size = tonumber(A_OFFSET), tonumber(A_SIZE)
local ring = redis.call('LLEN', K_TENANTS)
local out = {math.max(ring - 1, 0), redis.call('LLEN', K_QUEUE)}
if size > 0 then
  local page = redis.call('LRANGE', K_TENANTS, -(offset + size), -(offset + 1))
  for i = #page, 1, -1 do
    local t = page[i]
    if t ~= DEFAULT_TENANT then
      out[#out + 1] = t
      out[#out + 1] = redis.call('LLEN', tenant_key(t))
    end
  end
end
return out
