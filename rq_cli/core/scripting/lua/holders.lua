-- holders: who holds the items of one page of processing. Read-only.
-- A_OFFSET offset from the right end of P:processing (the oldest lease first)
-- A_COUNT page size (limits.py HOLDERS_PAGE: four multi-key reads per page)
-- Returns a flat list, SPECS['holders'].rows in scripts.py, per item, oldest lease first:
--   id, session (false: nobody known), deadline_ms (-1: unknown), live (1: a lease is held
--   now; 0: abandoned, the lease ran out and session is the last holder, from P:holders)
-- the definitions of _common.lua and _fair.lua this script names (scripts.py checks):
--@uses NOW lease_pttl processing_page
local ids, v3, v1, last, deadlines = processing_page(tonumber(A_OFFSET), tonumber(A_COUNT))
if #ids == 0 then return {} end
local out = {}
for k, id in ipairs(ids) do
  local session, live = v3[k] or v1[k], 1
  local deadline = tonumber(deadlines[k])
  if session then
    if not deadline or session ~= last[k] then
      -- a lease rq-cli did not grant (a peer's): its deadline is in the key's TTL
      local ttl = lease_pttl(id)
      deadline = ttl >= 0 and NOW + ttl or nil
    end
  else
    session, live = last[k], 0
  end
  out[#out + 1] = id
  out[#out + 1] = session
  out[#out + 1] = deadline or -1
  out[#out + 1] = live
end
return out
