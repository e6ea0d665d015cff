"""The record of a sharded queue on the server, its shard names and their placement
(docs/DESIGN.md section 7). No Typer, no rich.

``P:shards`` (a hash in the base prefix's own slot) holds the shard count in force, the live
shard prefixes in hash order, the generations still draining, the time of the last resize
and the running totals of shards already removed. It is written only in one WATCH/MULTI
transaction on that one key (:func:`update`).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...errors import BadInputError, ConfigError, UsageError
from ..contract.keys import shards_key
from ..contract.limits import MAX_SHARD_SALT, MAX_SHARDS
from ..contract.util import is_cluster


def shard_of(item_id: str, count: int) -> int:
    """The index of the shard an id hashes to, among ``count`` (crc32 of its UTF-8 bytes)."""
    return zlib.crc32(item_id.encode("utf-8", "surrogateescape")) % count


def shard_prefix(base: str, gen: int, index: int, salt: int = 0) -> str:
    """Shard ``index`` of generation ``gen``: the base's hash tag ``{T}`` becomes
    ``{T~gen.index}`` (``{T~gen.index.salt}`` with a salt); an untagged base gets
    ``base~gen.index``."""
    return marked(base, f"~{gen}.{index}" + (f".{salt}" if salt else ""))


def marked(base: str, mark: str) -> str:
    """``base`` with ``mark`` added inside its hash tag (``{T}`` becomes ``{T<mark>}``), or at
    its end when it has none."""
    start = base.find("{")
    end = base.find("}", start + 1) if start >= 0 else -1
    if start >= 0 and end > start + 1:
        return base[:end] + mark + base[end:]
    return base + mark


@dataclass
class Draining:
    """A retired generation: its shard prefixes in its hash order (None: already removed)."""

    gen: int
    shards: list[str | None]


@dataclass
class ShardMeta:
    """What ``P:shards`` says (``count`` 0: the queue is not sharded on the server)."""

    count: int = 0
    gen: int = 0
    live: list[str] = field(default_factory=list)
    draining: list[Draining] = field(default_factory=list)
    resized_ms: int = 0
    retired_counters: dict[str, int] = field(default_factory=dict)
    #: raised by one at every write of the record (a copy of an older version is not
    #: followed: see shardcopies.py)
    version: int = 0
    #: not on the server: the queue a config's ``shards = N`` would create (read as empty
    #: until the first push creates it)
    planned: bool = False

    def draining_prefixes(self) -> list[str]:
        return [p for d in self.draining for p in d.shards if p is not None]

    def fields(self) -> dict[str, str]:
        return {"count": str(self.count), "gen": str(self.gen), "live": json.dumps(self.live),
                "draining": json.dumps([{"gen": d.gen, "shards": d.shards}
                                        for d in self.draining]),
                "resized_ms": str(self.resized_ms),
                "retired_counters": json.dumps(self.retired_counters),
                "version": str(self.version)}


def parse(raw: dict[bytes, bytes], key: str = "") -> ShardMeta:
    """The record from its hash; a hash that is no record (BadInputError, exit 65) names ``key``."""
    if not raw:
        return ShardMeta()
    try:
        f = {k.decode(): v.decode() for k, v in raw.items()}
        meta = ShardMeta(
            count=int(f["count"]), gen=int(f.get("gen", 0)),
            live=json.loads(f.get("live", "[]")),
            draining=[Draining(int(d["gen"]), list(d["shards"]))
                      for d in json.loads(f.get("draining", "[]"))],
            resized_ms=int(f.get("resized_ms", 0)),
            retired_counters=json.loads(f.get("retired_counters", "{}")),
            version=int(f.get("version", 0)))
        ok = (len(meta.live) == meta.count and all(isinstance(p, str) for p in meta.live)
              and isinstance(meta.retired_counters, dict))
    except (KeyError, ValueError, TypeError, UnicodeDecodeError, AttributeError):
        ok = False
    if not ok:
        raise BadInputError(f"{key or 'the record'} is not the record of a sharded queue "
                        f"(fields count, gen, live, draining ...): "
                        f"'rq-cli reshard --replace' writes a new one over it")
    return meta


def read(client: Any, base: str) -> ShardMeta:
    return parse(client.hgetall(shards_key(base)), shards_key(base))


def count_note(name: str, configured: int | None, meta: ShardMeta) -> str | None:
    """The note for a client whose config names another shard count than the record, which
    is followed (None when they agree, or the config names none)."""
    if configured is None or meta.planned or not meta.count or configured == meta.count:
        return None
    return (f"rq-cli: note: queue {name!r} is configured with shards = {configured} but the "
            f"server has {meta.count}: the server's count is followed (set shards = "
            f"{meta.count} in the config to silence this)")


def acl_patterns(base: str) -> list[str]:
    """The ACL key patterns a sharded queue of base ``base`` uses: ``base:*`` (the record)
    and its shards' (every generation, index and salt: :func:`shard_prefix`)."""
    marked = shard_prefix(base, 0, 0)
    cut = marked.index("~") + 1
    return [f"{base}:*", marked[:cut] + "*"]


def refuse_if_sharded(client: Any, base: str, name: str) -> None:
    """Refuse (ConfigError, exit 78) to treat ``base`` as a plain queue where the server
    records it as sharded: a push there would go where no sharded client looks."""
    raw = client.hget(shards_key(base), "count")
    if raw is not None and not raw.isdigit():
        parse({b"count": raw}, shards_key(base))  # (raises: no record of a sharded queue)
    if raw is not None and int(raw):
        raise ConfigError(f"queue {name!r} is sharded on the server ({int(raw)} shards): set "
                          f"shards = {int(raw)} on its [queues.{name}] table in the config")


def update(client: Any, base: str, change: Callable[[ShardMeta], ShardMeta | None], *,
           replace: bool = False,
           written: Callable[[ShardMeta], Any] | None = None) -> ShardMeta:
    """Read the record, apply ``change`` (None: nothing to write) and write it back in one
    WATCH/MULTI transaction, retried when another client changed it meanwhile, its version
    raised by one; then ``written`` is called with it (resharding: its copies). A record
    that cannot be read is refused (BadInputError), or read as none with ``replace``."""
    import redis

    key = shards_key(base)
    while True:
        with client.pipeline(transaction=True) as pipe:
            try:
                pipe.watch(key)
                try:
                    meta = parse(pipe.hgetall(key), key)
                except BadInputError:
                    if not replace:
                        raise
                    meta = ShardMeta()
                new = change(meta)
                if new is None:
                    pipe.unwatch()
                    return meta
                new.version = meta.version + 1
                pipe.multi()
                pipe.delete(key)
                pipe.hset(key, mapping=new.fields())
                pipe.execute()
            except redis.WatchError:
                continue
        if written is not None:
            written(new)
        return new


# -- placement ----------------------------------------------------------------------------

def primaries_by_slot(client: Any) -> Callable[[int], str] | None:
    """slot -> the name of the primary serving it, or None when ``client`` is no Cluster."""
    if not is_cluster(client):
        return None
    node_of = client.nodes_manager.slots_cache

    def primary(slot: int) -> str:
        return str(node_of[slot][0].name)

    return primary


def place(client: Any, base: str, gen: int, count: int) -> list[str]:
    """``count`` shard prefixes of generation ``gen``: on a Cluster each on the primary that
    holds the fewest of them so far (salt searched per shard); elsewhere salt 0."""
    if not 1 <= count <= MAX_SHARDS:
        raise UsageError(f"the shard count must be between 1 and {MAX_SHARDS}")
    primary = primaries_by_slot(client)
    if primary is None:
        return [shard_prefix(base, gen, i) for i in range(count)]
    from redis.crc import key_slot

    load: dict[str, int] = {}
    for slot in range(0, 16384, 64):
        load.setdefault(primary(slot), 0)
    out: list[str] = []
    for i in range(count):
        least = min(load.values())
        for salt in range(MAX_SHARD_SALT):
            prefix = shard_prefix(base, gen, i, salt)
            node = primary(key_slot(prefix.encode()))
            if load.get(node, 0) == least:
                break
        load[node] = load.get(node, 0) + 1
        out.append(prefix)
    return out


def placement(client: Any, prefixes: list[str]) -> dict[str, list[str]]:
    """primary name -> the shard prefixes it serves ({} off a Cluster)."""
    primary = primaries_by_slot(client)
    if primary is None:
        return {}
    from redis.crc import key_slot

    out: dict[str, list[str]] = {}
    for prefix in prefixes:
        out.setdefault(primary(key_slot(prefix.encode())), []).append(prefix)
    return out
