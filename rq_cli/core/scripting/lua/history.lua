-- history: snapshot the queue's counters into its history (P:history, P:history_hourly),
-- once per minute and once per hour however many callers run: the first call in a bucket
-- writes it, the others change nothing. No arguments. Clean does the same in each call.
-- Returns 1 if this call wrote this minute's snapshot, else 0.
-- the definitions of _common.lua and _fair.lua this script names (scripts.py checks):
--@uses snapshot_history wrong_type
do local bad = wrong_type(); if bad then return bad end end
return snapshot_history()
