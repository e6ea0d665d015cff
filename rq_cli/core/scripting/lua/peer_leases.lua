-- peer_leases: the live leases rq-cli has no live record of (a peer's) in one page of processing,
-- for stats past the page stats.lua reads itself. Read-only.
-- A_OFFSET offset from the right end of P:processing (the oldest lease first)
-- A_COUNT page size (limits.py LEASED_PAGE: four multi-key reads per page)
-- Returns {peer_leased, looked}: the count, and how many ids the page had (fewer than
-- A_COUNT: processing ends there).
-- the definitions of _common.lua and _fair.lua this script names (scripts.py checks):
--@uses peer_leases
local found, looked = peer_leases(tonumber(A_OFFSET), tonumber(A_COUNT))
return {found, looked}
