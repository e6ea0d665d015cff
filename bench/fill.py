"""Fill a queue with millions of items fast: a Lua script creates a batch of items per call
(ids and data generated server-side), several calls per pipelined round trip.

The layouts written are the ones rq-cli's own push/lease/fail leave behind (item key, list
entry, ``P:enqueued``, ``P:attempts``, leases, dead letters), or the bare peer layout
(``P:item:<id>`` + list entry) for the redis-work-queue baselines. Not timed.
"""

from __future__ import annotations

import os
from typing import Any

BATCH = 3000  # items per script call (Lua's unpack() takes at most ~8000 values)
DEPTH = 8  # script calls per round trip

FILL_LUA = r"""
local P, kind, start, n, tag = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
local stray_every = tonumber(ARGV[6])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ids, stamped = {}, {}
for i = start, start + n - 1 do
  local id = tag .. string.format('%08x', i)
  local data = '{"n":' .. i .. ',"user":"user-' .. (i % 977) ..
               '","action":"send-email","body":"lorem ipsum dolor sit amet"}'
  if kind == 'dead' then
    redis.call('SET', P .. ':dead_item:' .. id, data)
    redis.call('ZADD', P .. ':dead', now - (start + n - i), id)
    redis.call('HSET', P .. ':dead_info', id,
               '{"reason":"failed","attempts":5,"at":' .. (now / 1000) .. '}')
  else
    redis.call('SET', P .. ':item:' .. id, data)
    local stray = stray_every > 0 and i % stray_every == 0
    if not stray then ids[#ids + 1] = id end
    if kind == 'pending' or kind == 'processing' or kind == 'leased' then
      stamped[#stamped + 1] = id
      stamped[#stamped + 1] = now
    end
    if kind == 'leased' then
      redis.call('SET', P .. ':lease:' .. id, 'bench:1:x', 'PX', 3600000)
      redis.call('SET', P .. ':leased_by_session:' .. id, 'bench:1:x', 'PX', 3600000)
      redis.call('ZADD', P .. ':leases', now + 3600000, id)
    end
    if kind == 'processing' or kind == 'leased' then
      redis.call('HSET', P .. ':attempts', id, 1)
    end
  end
end
if #stamped > 0 then redis.call('HSET', P .. ':enqueued', unpack(stamped)) end
if #ids > 0 then
  local list = ':queue'
  if kind == 'processing' or kind == 'leased' or kind == 'peer_processing' then
    list = ':processing'
  end
  redis.call('LPUSH', P .. list, unpack(ids))
end
return n
"""

KINDS = ("pending", "processing", "leased", "dead", "peer_pending", "peer_processing")


def fill(client: Any, prefix: str, kind: str, n: int, *, stray_every: int = 0,
         tag: str | None = None) -> str:
    """Create ``n`` items of ``kind`` under ``prefix``; returns the 24-hex id tag used.

    pending: item + P:queue + P:enqueued (what ``push`` writes);
    processing: item + P:processing + attempts, no lease (abandoned by a crashed worker);
    leased: the same with live leases (both lease keys and P:leases);
    dead: dead letters (P:dead_item, P:dead, P:dead_info);
    peer_pending / peer_processing: the bare redis-work-queue layout.
    ``stray_every=k`` leaves every k-th item out of its list (a stray, for deep clean).
    """
    if kind not in KINDS:
        raise ValueError(kind)
    tag = tag or os.urandom(12).hex()
    script = client.register_script(FILL_LUA)
    start = 0
    while start < n:
        pipe = client.pipeline(transaction=False)
        for _ in range(DEPTH):
            if start >= n:
                break
            size = min(BATCH, n - start)
            script(args=[prefix, kind, start, size, tag, stray_every], client=pipe)
            start += size
        pipe.execute()
    return tag


def item_ids(tag: str, n: int) -> list[str]:
    """The ids :func:`fill` gave to items 0..n-1."""
    return [f"{tag}{i:08x}" for i in range(n)]
