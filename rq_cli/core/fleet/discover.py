"""Finding queues on a server by SCAN, for ``stats --discover`` and ``queues``.

Read-only. A prefix is recognised by one of its marker keys (``keys.DISCOVERY_SUFFIXES``).
SCAN is filtered by key TYPE on the server, so the (usually millions of) item strings never
cross the wire; the walk is bounded per call (COUNT) like every bulk read.
"""

from __future__ import annotations

from typing import Any

# (SCAN TYPE, suffixes of that type): each of keys.DISCOVERY_SUFFIXES once
# (tests/core/test_discover.py)
_BY_TYPE = (
    ("list", (":queue", ":processing")),
    ("zset", (":delayed", ":dead")),
    ("hash", (":counters",)),
)


def discover_queues(client: Any) -> list[str]:
    """Prefixes of the queues on the server behind ``client``, sorted. A sharded queue is
    one queue, its base prefix (found by its record, ``P:shards``): its shards' prefixes,
    live and draining, are not listed apart (docs/sharded-queues.md)."""
    from ..contract.keys import SHARDS
    from ..sharding.shardmeta import read

    record = f":{SHARDS}"  # (a sharded queue's record, P:shards)
    found: set[str] = set()
    bases: set[str] = set()
    for key_type, suffixes in _BY_TYPE:
        for key in client.scan_iter(match="*:*", count=1000, _type=key_type):
            try:
                name = key.decode("utf-8") if isinstance(key, bytes) else key
            except UnicodeDecodeError:  # a prefix no command line could name: skip it
                continue
            for suffix in suffixes:
                if name.endswith(suffix) and len(name) > len(suffix):
                    found.add(name[: -len(suffix)])
            if key_type == "hash" and name.endswith(record) and len(name) > len(record):
                bases.add(name[: -len(record)])
    for base in sorted(bases):  # (one HGETALL per sharded queue)
        meta = read(client, base)
        if meta.count:
            found.difference_update([*meta.live, *meta.draining_prefixes()])
            found.add(base)
    return sorted(found)
