"""``doctor``'s durability check of one queue: can its setting be met, is it on where a
failover would otherwise lose acknowledged writes, and which faults it survives (the manual's
"Guarantees").

- ``wait_replicas = N`` (or ``"all"``: every replica, as the sentinels list them, else as the
  primary counts them): the queue's primary has that many replicas connected and in sync
  (state online, acknowledged within ``wait_timeout`` or a second), else every write waits
  out the timeout and exits 8: a ``fail``. Met, it says what it survives: a crash of the
  primary; a partition too only when every replica confirms each write.
- ``wait_fsync``: the server has WAITAOF (Redis >= 7.2, Valkey) and its append-only file is
  on, else a ``fail`` (the replicas' own AOF cannot be seen from the primary: said so); with
  ``wait_replicas = 0`` and replicas behind the primary a ``warn``: it waits for this
  primary's own disk only, which a failover throws away with the rest.
- Off, with replicas behind the primary (Sentinel, a Cluster with replicas, or by hand): a
  ``warn``, as a failover then loses what the replicas had not received.

One round trip (INFO server, replication and persistence in one pipeline), and behind
Sentinel one to a sentinel (its replica list). Plain functions over a redis-py client: no
Typer, no rich.
"""

from __future__ import annotations

from typing import Any

from ..core.contract.limits import ALL_REPLICAS
from ..core.operations.durable import WAITAOF_SERVERS, listed_replicas
from ..core.types import QueueOptions
from .doctor import FAIL, OK, WARN, Check, as_text

CHECK = "durability"


def _sections(client: Any) -> dict[str, dict[str, Any]]:
    pipe = client.pipeline(transaction=False)
    for section in ("server", "replication", "persistence"):
        pipe.execute_command("INFO", section)
    out: dict[str, dict[str, Any]] = {}
    for section, reply in zip(("server", "replication", "persistence"),
                              pipe.execute(raise_on_error=False), strict=True):
        if isinstance(reply, BaseException):
            out[section] = {}
            continue
        fields: dict[str, Any] = {}
        if isinstance(reply, dict):  # (redis-py parses INFO: a replica's line is a dict)
            fields = {str(k): v if isinstance(v, dict) else as_text(v)
                      for k, v in reply.items()}
        else:
            for line in as_text(reply).splitlines():
                key, sep, value = line.partition(":")
                if sep and not key.startswith("#"):
                    fields[key.strip()] = value.strip()
        out[section] = fields
    return out


def _replicas(replication: dict[str, Any]) -> list[dict[str, str]]:
    rows = []
    for key, value in replication.items():
        if key.startswith("slave") and key[5:].isdigit():
            rows.append({str(k): as_text(v) for k, v in value.items()} if isinstance(
                value, dict) else dict(part.partition("=")[::2] for part in value.split(",")))
    return rows


def has_waitaof(server: dict[str, Any]) -> bool:
    """Whether the server INFO describes has WAITAOF (Valkey, Redis >= 7.2)."""
    if "valkey_version" in server or server.get("server_name") == "valkey":
        return True
    numbers = []
    for part in str(server.get("redis_version", "0")).split(".")[:2]:
        numbers.append(int(part) if part.isdigit() else 0)
    return tuple(numbers) >= (7, 2)


#: The setting that survives a partition, as the fixes say it.
ALL_FIX = (f'set wait_replicas = "{ALL_REPLICAS}" for the queue '
           f"($RQ_CLI_WAIT_REPLICAS={ALL_REPLICAS})")


def survives(count: int, total: int) -> str:
    """Which faults ``count`` confirming replicas of ``total`` survive, as a phrase."""
    if count >= total:
        return ("survives a crash of the primary and a partition (every replica confirms "
                "each write)")
    return (f"survives a crash of the primary, not a partition that leaves it with {count} "
            f"of its {total} replicas")


def durability(client: Any, options: QueueOptions) -> Check:
    """The durability check of a queue with ``options`` whose primary ``client`` reaches."""
    info = _sections(client)
    replication = info["replication"]
    if not replication:
        return Check(CHECK, WARN, "could not read INFO replication",
                     "allow INFO for this user to check the replicas")
    replicas = _replicas(replication)
    in_sync = [r for r in replicas if r.get("state") == "online"
               and int(r.get("lag", "0") or 0) <= max(options.wait_timeout, 1.0)]
    listed = listed_replicas(client)  # (behind Sentinel: every replica, down ones too)
    total = max(len(replicas), listed or 0)
    if not options.durable:
        if total:
            return Check(CHECK, WARN,
                         f"off, with {total} replica(s): a failover loses the "
                         "acknowledged writes they had not received yet",
                         f"{ALL_FIX}: survives a crash of the primary and a partition "
                         "(wait_replicas = 1: a crash of the primary only)")
        return Check(CHECK, OK, "off (no replicas: nothing to wait for)")
    if options.wait_fsync:
        if not has_waitaof(info["server"]):
            return Check(CHECK, FAIL, "wait_fsync = true, but this server has no WAITAOF "
                         f"({WAITAOF_SERVERS} have it): every write is refused",
                         "set wait_fsync = false, or upgrade the server")
        if str(info["persistence"].get("aof_enabled")) != "1":
            return Check(CHECK, FAIL, "wait_fsync = true, but the append-only file is off "
                         "here: every write is refused", "CONFIG SET appendonly yes (and in "
                         "the server's config file, and on each replica)")
    if options.wait_replicas == ALL_REPLICAS:
        wanted = listed if listed is not None else len(replicas)
        setting = f"{ALL_REPLICAS} ({wanted}, as the " + \
            ("sentinels list them)" if listed is not None else "primary counts them)")
    else:
        wanted = int(options.wait_replicas)
        setting = str(wanted)
    if wanted == 0:  # (wait_fsync alone, or "all" of none)
        what = "wait_fsync = true waits for this primary's own disk only" \
            if options.wait_fsync else f"wait_replicas = {setting} waits for nothing"
        if total:
            return Check(CHECK, WARN, f"{what}: a failover to one of its {total} replica(s) "
                         "still loses the acknowledged writes it had not received", ALL_FIX)
        return Check(CHECK, OK, f"{what}: survives a crash of this server"
                     f"{' (its disk)' if options.wait_fsync else ''}; no replicas")
    if len(in_sync) < wanted:
        return Check(CHECK, FAIL,
                     f"wait_replicas = {setting}, but {len(in_sync)} of {len(replicas)} "
                     "replica(s) are connected and in sync: every write waits "
                     f"{options.wait_timeout:g} s and exits 8 (unconfirmed)",
                     "start or repair the replicas, or lower wait_replicas")
    disk = "; wait_fsync: on disk here (each replica needs appendonly yes too)" \
        if options.wait_fsync else ""
    return Check(CHECK, OK, f"wait_replicas = {setting}: {len(in_sync)} replica(s) in "
                            f"sync{disk}; {survives(wanted, total)}",
                 None if wanted >= total else f"{ALL_FIX} to survive a partition too")
