"""What a queue's promises depend on, read from its server: the checks of ``rq-cli doctor``.

A queue loses nothing only while its server does: a server that keeps nothing on disk loses
every queue when it restarts (``stats`` then shows a healthy, empty queue), one that evicts
keys when full drops items and leases, a replica refuses writes, a user without the
commands the scripts run is refused halfway. Each check gives ``ok``, ``warn`` or ``fail``,
what it saw, and what to change.

- :func:`server_checks`: round-trip latency, version and Functions, persistence (AOF/RDB),
  eviction and memory, replication: two round trips in all (the PINGs, then one pipeline).
- :func:`rq_cli.health.acl.queue_checks`: the ACL rights one queue needs.
- :func:`risks`: the one-line warnings ``stats`` prints on a terminal (one round trip).

A setting the server will not show (``CONFIG`` renamed, or denied by the ACL) is a ``warn``
that says what could not be read, never an error. A server that cannot be reached raises
redis-py's error: the caller reports it (``doctor``: a ``fail`` of its own). Plain functions
over a redis-py client: no Typer, no rich; redis is imported only inside them.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.contract.keys import MIN_REDIS_VERSION, Keys
from ..core.contract.limits import GENERATION_SAMPLE
from ..core.scripting.scripts import library

OK, WARN, FAIL = "ok", "warn", "fail"
#: round trips slower than this (median, ms) are a warn: each queue operation is one
SLOW_MS = 20.0
#: a replica further behind than this (seconds since its last acknowledgement) is a warn
REPLICA_LAG_S = 10.0
#: used memory above this share of ``maxmemory`` is a warn (writes are refused when full)
MEMORY_SHARE = 0.9
PINGS = 5


@dataclass(frozen=True)
class Check:
    """One finding: ``check`` (its name), ``status`` (ok, warn, fail), what was seen
    (``detail``) and what to change (``fix``; None when there is nothing to change)."""

    check: str
    status: str
    detail: str
    fix: str | None = None


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(".") if p.isdigit())


def reason(error: BaseException) -> str:
    """Why a read was refused, in a few words (the server's own first line)."""
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    lowered = text.lower()
    if "noperm" in lowered or "no permissions" in lowered:
        return f"denied by the ACL ({text})"
    if "unknown command" in lowered or "unknown subcommand" in lowered:
        return f"not available, renamed or disabled ({text})"
    return text


def is_connection_error(error: BaseException) -> bool:
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError

    return isinstance(error, (RedisConnectionError, RedisTimeoutError, OSError))


def read_all(client: Any, calls: Mapping[str, tuple[str, ...]]) -> dict[str, Any]:
    """Run ``calls`` (name -> command words) in one pipeline (one round trip); each name maps
    to its reply, or to the exception the server answered it with. A lost connection raises."""
    pipe = client.pipeline(transaction=False)
    for words in calls.values():
        pipe.execute_command(*words)
    replies = pipe.execute(raise_on_error=False)
    found = dict(zip(calls, replies, strict=True))
    for reply in found.values():
        if isinstance(reply, BaseException) and is_connection_error(reply):
            raise reply
    return found


def as_text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _info(reply: Any) -> dict[str, str] | None:
    """An INFO reply (bytes or text) as a dict of strings; None if it was refused."""
    if isinstance(reply, BaseException) or reply is None:
        return None
    if isinstance(reply, Mapping):  # (redis-py parses INFO: ``slave0`` becomes a dict)
        return {as_text(k): ",".join(f"{as_text(a)}={as_text(b)}" for a, b in v.items())
                if isinstance(v, Mapping) else as_text(v) for k, v in reply.items()}
    fields: dict[str, str] = {}
    for line in as_text(reply).splitlines():
        if line and not line.startswith("#") and ":" in line:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return fields


def _config(reply: Any) -> str | None:
    """The value of a ``CONFIG GET name`` reply; None if refused or unknown."""
    if isinstance(reply, BaseException) or not reply:
        return None
    if isinstance(reply, Mapping):
        values = list(reply.values())
        return as_text(values[0]) if values else None
    return as_text(reply[1]) if len(reply) >= 2 else None


SERVER_READS: dict[str, tuple[str, ...]] = {
    "server": ("INFO", "server"),
    "persistence": ("INFO", "persistence"),
    "memory": ("INFO", "memory"),
    "replication": ("INFO", "replication"),
    "appendonly": ("CONFIG", "GET", "appendonly"),
    "appendfsync": ("CONFIG", "GET", "appendfsync"),
    "save": ("CONFIG", "GET", "save"),
    "policy": ("CONFIG", "GET", "maxmemory-policy"),
}


def _function_list() -> tuple[str, ...]:
    """``FUNCTION LIST`` of this rq-cli's library, by its own name (``LIBRARYNAME`` is a glob
    pattern, and the name has no glob character): one row when it is loaded, none when not."""
    return ("FUNCTION", "LIST", "LIBRARYNAME", library().name)


def nodes(client: Any) -> list[tuple[str, Any]]:
    """(name, client) of each server behind ``client``: a cluster's primaries (``host:port``,
    each with its own client), else the client itself, named ""."""
    if not hasattr(client, "get_primaries"):
        return [("", client)]
    return [(node.name, client.get_redis_connection(node)) for node in client.get_primaries()]


def node_of(client: Any, prefix: str) -> Any:
    """The client of the server that holds the queue ``prefix`` (its cluster node)."""
    if not hasattr(client, "get_node_from_key"):
        return client
    return client.get_redis_connection(client.get_node_from_key(f"{prefix}:queue"))


def server_checks(client: Any, *, pings: int = PINGS, fcall: bool = True) -> list[Check]:
    """Every server-wide check, in the order shown; ``fcall``: whether rq-cli would call
    Functions here (not through a cluster client, nor with RQ_CLI_FUNCTIONS=0). Raises
    redis-py's error when the server cannot be reached (the first PING)."""
    checks = [latency(client, pings)]
    got = read_all(client, {**SERVER_READS, "functions": _function_list()})
    info = {name: _info(got[name]) for name in ("server", "persistence", "memory",
                                                "replication")}
    config = {name: _config(got[name]) for name in ("appendonly", "appendfsync", "save",
                                                    "policy")}
    refused = [name for name in config if isinstance(got[name], BaseException)]
    denied = (f"CONFIG GET {', '.join(SERVER_READS[n][-1] for n in refused)}: "
              f"{reason(got[refused[0]])}" if refused else "")
    checks += version_checks(info["server"], got["functions"], _reason_of(got, "server"),
                             fcall)
    checks.append(persistence(info["persistence"], config, denied or _reason_of(got,
                                                                              "persistence")))
    checks.append(eviction(info["memory"], config["policy"], _reason_of(got, "memory")))
    checks.append(replication(info["replication"], _reason_of(got, "replication")))
    return checks


def _reason_of(got: Mapping[str, Any], name: str) -> str:
    reply = got[name]
    return reason(reply) if isinstance(reply, BaseException) else ""


def latency(client: Any, pings: int = PINGS) -> Check:
    """Round trips of ``pings`` PINGs: the median decides (one slow PING is noise)."""
    times = []
    for _ in range(max(1, pings)):
        start = time.perf_counter()
        client.ping()
        times.append((time.perf_counter() - start) * 1000)
    median = statistics.median(times)
    detail = f"round trip {median:.2f} ms (median of {len(times)} PINGs, max {max(times):.2f})"
    if median > SLOW_MS:
        return Check("latency", WARN, detail,
                     f"each queue operation is one round trip: at {median:.0f} ms a worker "
                     f"leases at most {1000 / median:.0f} items/s; run workers near the "
                     "server, or lease --count N")
    return Check("latency", OK, detail)


def version_checks(info: dict[str, str] | None, functions: Any, refused: str,
                   fcall: bool = True) -> list[Check]:
    """The server's version against rq-cli's floor, and whether Functions are there."""
    if info is None:
        return [Check("version", WARN, f"could not read INFO server: {refused}",
                      "allow INFO for this user to check it (rq-cli needs Redis >= "
                      f"{MIN_REDIS_VERSION} or Valkey)")]
    redis_version = info.get("redis_version", "?")
    kind, version = (("valkey", info["valkey_version"]) if "valkey_version" in info
                     else ("redis", redis_version))
    name = f"{kind} {version}"
    if kind == "redis" and _version_tuple(redis_version) < _version_tuple(MIN_REDIS_VERSION):
        return [Check("version", FAIL, f"{name}: too old",
                      f"upgrade to Redis >= {MIN_REDIS_VERSION} or Valkey")]
    checks = [Check("version", OK, name)]
    if isinstance(functions, BaseException):
        text = reason(functions)
        if "acl" in text.lower():
            checks.append(Check("functions", WARN, f"FUNCTION LIST {text}",
                                "allow +fcall +function|load for faster calls (10-15% of "
                                "the server's time per item)"))
        else:
            checks.append(Check("functions", OK, f"no Functions on {name}: the scripts run "
                                "as EVALSHA (Redis >= 7 or Valkey saves 10-15% server time)"))
    elif not fcall:
        checks.append(Check("functions", OK, "Functions available, not used here (a cluster "
                            "client, or RQ_CLI_FUNCTIONS=0): the scripts run as EVALSHA"))
    else:
        loaded = "loaded" if functions else "not loaded yet (the first worker call loads it)"
        checks.append(Check("functions", OK, f"Functions available; rq-cli's library {loaded}"))
    return checks


def persistence(info: dict[str, str] | None, config: Mapping[str, str | None],
                refused: str) -> Check:
    """AOF and RDB: does what a client was told is done survive a restart?"""
    aof = config["appendonly"] == "yes" if config["appendonly"] is not None else (
        info.get("aof_enabled") == "1" if info else None)
    save = config["save"]
    if info is not None:
        for key, what in (("aof_last_write_status", "the last AOF write"),
                          ("rdb_last_bgsave_status", "the last RDB snapshot")):
            if info.get(key, "ok") != "ok":
                return Check("persistence", FAIL, f"{what} failed ({key}:{info[key]})",
                             "look at the server's log (a full disk?): until it writes, "
                             "a restart loses what it could not write")
    if aof is None:
        return Check("persistence", WARN, f"could not read the persistence settings: {refused}",
                     "check appendonly and save in the server's config by hand, or allow "
                     "CONFIG GET and INFO for this user")
    if aof:
        fsync = config["appendfsync"]
        if fsync == "no":
            return Check("persistence", WARN, "AOF on, appendfsync no: the OS decides when "
                         "writes reach the disk", "CONFIG SET appendfsync everysec (or always)")
        how = {"always": "every write on disk before the reply",
               "everysec": "a crash of the machine may lose the last second",
               None: f"appendfsync unknown: {refused}"}.get(fsync, f"appendfsync {fsync}")
        return Check("persistence", OK, f"AOF on ({how})")
    if save is None:
        return Check("persistence", WARN, f"AOF off; could not read the RDB schedule: {refused}",
                     "check save in the server's config; CONFIG SET appendonly yes to keep "
                     "every acknowledged write")
    if save.strip():
        return Check("persistence", WARN, f"RDB snapshots only (save {save}): a crash loses "
                     "what was written since the last snapshot",
                     "CONFIG SET appendonly yes (and in the server's config file)")
    return Check("persistence", FAIL, "no persistence (appendonly no, save \"\"): a restart "
                 "loses every queue, and stats then shows them empty",
                 "CONFIG SET appendonly yes (and in the server's config file)")


def eviction(info: dict[str, str] | None, policy: str | None, refused: str) -> Check:
    """maxmemory-policy: a server that evicts keys drops items and leases."""
    policy = policy or (info or {}).get("maxmemory_policy")
    if policy is None:
        return Check("eviction", WARN, f"could not read maxmemory-policy: {refused}",
                     "check that maxmemory-policy is noeviction, or allow CONFIG GET and INFO")
    maxmemory = int((info or {}).get("maxmemory", "0") or 0)
    used = int((info or {}).get("used_memory", "0") or 0)
    limit = f"maxmemory {maxmemory}" if maxmemory else "no maxmemory"
    if policy != "noeviction":
        fix = "CONFIG SET maxmemory-policy noeviction (and in the server's config file)"
        if maxmemory:
            return Check("eviction", FAIL, f"maxmemory-policy {policy} ({limit}): when full, "
                         "the server deletes keys, so items vanish and leases end early", fix)
        return Check("eviction", WARN, f"maxmemory-policy {policy} ({limit}): items would be "
                     "deleted once a memory limit is set", fix)
    if maxmemory and used > MEMORY_SHARE * maxmemory:
        return Check("eviction", WARN, f"noeviction; {used * 100 // maxmemory}% of maxmemory "
                     "used: writes (push, lease) are refused when full",
                     "raise maxmemory, or drain or purge queues")
    return Check("eviction", OK, f"noeviction ({limit})")


def replication(info: dict[str, str] | None, refused: str) -> Check:
    """The server's role and its replicas' lag (a failover loses what they lack)."""
    if info is None:
        return Check("replication", WARN, f"could not read INFO replication: {refused}",
                     "allow INFO for this user to check replicas")
    if info.get("role") in ("slave", "replica"):
        return Check("replication", FAIL, "this server is a replica: it refuses writes",
                     "point the URL at the primary (or use redis+sentinel://)")
    replicas = [_fields(v) for k, v in sorted(info.items())
                if k.startswith("slave") and k[5:].isdigit()]
    if not replicas:
        return Check("replication", OK, "primary, no replicas")
    offset = int(info.get("master_repl_offset", "0") or 0)
    behind = [r for r in replicas if r.get("state") != "online"
              or float(r.get("lag", "0") or 0) > REPLICA_LAG_S]
    worst = max(offset - int(r.get("offset", "0") or 0) for r in replicas)
    detail = f"primary, {len(replicas)} replica(s), up to {worst} bytes behind"
    if behind:
        shown = ", ".join(f"{r.get('ip')}:{r.get('port')} {r.get('state')} lag "
                          f"{r.get('lag')}s" for r in behind)
        return Check("replication", WARN, f"{detail}; behind: {shown}",
                     "a failover now loses what the replica lacks: check its link and load")
    return Check("replication", OK, detail)


def _fields(value: str) -> dict[str, str]:
    """``ip=..,port=..,state=online,offset=..,lag=0`` as a dict."""
    return dict(part.partition("=")[::2] for part in value.split(","))


# -- peers of both generations on one queue ----------------------------------------------------
def generations(places: Sequence[tuple[Any, str]], sample: int = GENERATION_SAMPLE) -> Check:
    """``peers``: do clients of both peer generations lease from one queue of ``places``
    ((client, prefix) of a queue, or of each shard of a sharded queue: a peer works one
    shard by its prefix)?

    A v0.3 peer writes only ``P:lease:<id>``, a v0.1 peer only ``P:leased_by_session:<id>``
    (and its cleaner journals in ``P:cleaning``); rq-cli's ``compat`` layout writes both.
    Each generation's own cleaner ignores the other's lease key, so with both generations'
    cleaners running an item one holds can be handed out again and completed twice. Looks
    at the ``sample`` newest and oldest ids of processing of each: two round trips each,
    whatever the queue's size."""
    try:
        found = [(_generations(client, Keys(prefix), sample), prefix)
                 for client, prefix in places]
    except Exception as exc:  # (refused by the ACL: a warn; a lost server: the caller's)
        if is_connection_error(exc):
            raise
        return Check("peers", WARN, f"could not look at the lease keys: {reason(exc)}",
                     "allow LRANGE and EXISTS on the queue's keys "
                     "(the manual's 'ACL', in Deployments)")
    seen = f"{sum(n for (n, _, _, _), _ in found)} ids of processing looked at"
    if len(places) > 1:
        seen += f" in {len(places)} shards"
    for (_, v03, v01, cleaning), prefix in found:
        if v03 and (v01 or cleaning):
            v01_seen = f"{v01} v0.1 lease(s) (leased_by_session only)" if v01 else \
                f"the v0.1 cleaner's journal ({Keys(prefix).cleaning})"
            where = f" on shard {prefix}" if len(places) > 1 else ""
            return Check("peers", WARN, f"peers of both generations lease here{where}: {v03} "
                         f"v0.3 lease(s) (lease only) and {v01_seen} ({seen}); each "
                         "generation's cleaner ignores the other's lease key, so an item one "
                         "holds may be handed out again and completed twice",
                         "run no peer cleaner (light_clean, deep_clean) on this queue: rq-cli "
                         "clean (layout compat) honours both lease keys; or move one "
                         "generation to rq-cli")
    return Check("peers", OK, f"no sign of peers of both generations ({seen})")


def _generations(client: Any, keys: Keys, sample: int) -> tuple[int, int, int, bool]:
    """(ids looked at, v0.3 leases, v0.1 leases, the v0.1 cleaner's journal there)."""
    pipe = client.pipeline(transaction=False)
    pipe.lrange(keys.processing, 0, sample - 1)
    pipe.lrange(keys.processing, -sample, -1)
    pipe.exists(keys.cleaning)
    newest, oldest, cleaning = pipe.execute()
    ids = list(dict.fromkeys([*newest, *oldest]))
    lease, by_session = keys.lease("").encode(), keys.leased_by_session("").encode()
    pipe = client.pipeline(transaction=False)
    for item_id in ids:
        pipe.exists(lease + item_id)
        pipe.exists(by_session + item_id)
    found = pipe.execute() if ids else []
    v03 = sum(1 for a, b in zip(found[::2], found[1::2], strict=True) if a and not b)
    v01 = sum(1 for a, b in zip(found[::2], found[1::2], strict=True) if b and not a)
    return len(ids), v03, v01, bool(cleaning)


# -- fleet-wide limits ---------------------------------------------------------------------------
def limits(places: Sequence[tuple[Any, str]], sample: int = GENERATION_SAMPLE) -> Check | None:
    """``limits``: the queue's fleet-wide limits (``rq-cli limit``), None when it has none; a
    warn when peer clients lease from it (lease keys of one generation only, in the
    ``sample`` newest and oldest ids of processing): they do not see the limits."""
    try:
        got = [client.hgetall(Keys(prefix).limits) for client, prefix in places]
    except Exception as exc:  # (refused by the ACL: no row; a lost server: the caller's)
        if is_connection_error(exc):
            raise
        return None
    if not any(got):
        return None
    rate = next((g[b"rate"].decode() for g in got if b"rate" in g), None)
    caps = [int(g[b"max_in_flight"]) for g in got if b"max_in_flight" in g]
    said = ", ".join([*([f"rate {rate}"] if rate else []),
                      *([f"at most {sum(caps)} in flight"] if caps else [])])
    peers = sum(v03 + v01 for client, prefix in places
                for _, v03, v01, _ in [_generations(client, Keys(prefix), sample)])
    if peers:
        return Check("limits", WARN, f"{said}; but {peers} lease(s) of peer clients in "
                     "processing: a peer that leases directly neither obeys the limits nor "
                     "counts in the cap", "lease this queue only through rq-cli (lease, "
                     "work or the library): the manual's 'Limits'")
    return Check("limits", OK, f"{said}, held by every rq-cli lease (peers that lease "
                 "directly do not see them)")


# -- the warning of stats -----------------------------------------------------------------------
def risks(client: Any) -> list[str]:
    """What makes the server lose work, in a few words each (``stats`` warns on a terminal):
    no persistence, eviction. One round trip; whatever cannot be read is left out."""
    try:
        got = read_all(client, {"persistence": ("INFO", "persistence"),
                                "memory": ("INFO", "memory"), "save": ("CONFIG", "GET", "save")})
    except Exception:  # the command itself reports the server; this is only a hint
        return []
    found = []
    info = _info(got["persistence"])
    save = _config(got["save"])
    if info is not None and info.get("aof_enabled") == "0" and save is not None and \
            not save.strip():
        found.append("keeps nothing on disk (appendonly no, save \"\"): a restart loses "
                     "every queue")
    policy = (_info(got["memory"]) or {}).get("maxmemory_policy")
    if policy not in (None, "noeviction"):
        found.append(f"evicts keys when full (maxmemory-policy {policy})")
    return found
