-- complete: delete each item's data, lease, list entry and bookkeeping. Exactly one caller
-- per item gets "C": the one whose DEL removed the data key.
-- From ARGV[REST] (scripts.py SPECS), pairs id, session ("" = any). With a session, an item whose lease
-- another session holds is refused ("X"), so a worker whose lease expired cannot complete
-- work re-leased to someone else.
-- Returns a string, one character per id: C completed, M missing (not live), X conflict.
-- The leases are read in two MGETs and the bookkeeping dropped in a few multi-value commands
-- for the whole call; per item remain the DEL that decides and, unless the completed ids are
-- one run in processing (a batch leased together), the LREM from processing.
-- the definitions of _common.lua and _fair.lua this script names (scripts.py checks):
--@uses complete_pairs wrong_type LIMITED limit_freed
--@uses record_history
do local bad = wrong_type(); if bad then return bad end end
record_history()  -- this minute's history bucket (lua/_history.lua)
if not LIMITED then return complete_pairs(REST) end
-- (an in-flight cap: wake a client waiting for each place freed; _limits.lua)
local done = complete_pairs(REST)
limit_freed(LIMITED, select(2, string.gsub(done, O_COMPLETED, '')))
return done
