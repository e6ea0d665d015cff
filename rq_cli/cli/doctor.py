"""``rq-cli doctor``: what the queues' promises depend on, checked on their servers.

The checks live in :mod:`rq_cli.health.doctor` and :mod:`rq_cli.health.acl`; this command finds
the servers (as ``stats`` does: the named queues, else the configured ones, else the default
server and the queues found on it; a cluster: each primary), prints one row per check, and
picks the exit code for cron.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import typer

from ..core.types import QueueOptions
from ..errors import CheckFailed, CheckUnknown, CheckWarned, RqError, ServerError
from ..output.render import Column, Output
from .common import JsonOpt, OptQueuesArg, State, state

if TYPE_CHECKING:
    from ..health.doctor import Check

COLUMNS = [Column("server", optional=True), Column("queue", optional=True), Column("check"),
           Column("status"), Column("detail"), Column("fix", optional=True)]

#: the checks whose fail means the state is unknown (exit 6): the server could not be
#: reached, the queue has never existed on it
UNKNOWN = ("connect", "queue")


class Server:
    """One server to examine: its URL, its client (None: it could not even be opened, see
    ``error``) and the queues on it (name, prefix)."""

    def __init__(self, url: str, client: Any, error: str | None = None) -> None:
        self.url = url
        self.client = client
        self.error = error
        self.queues: list[tuple[str, str]] = []
        self.options: dict[str, QueueOptions] = {}  # a queue's, by name (durability)


def doctor(ctx: typer.Context, queues: OptQueuesArg = None, as_json: JsonOpt = False) -> None:
    """Check what the queues rely on: persistence, eviction, version, ACL, replicas, latency.

    Each check is ok, warn or fail, with what to change. Exit 0: all ok; 7: warnings only;
    5: a check failed; 6: a server could not be reached, or a queue has never existed on it.

    Example: rq-cli doctor emails --json
    """
    st = state(ctx)
    out = st.output(as_json)
    rows: list[dict[str, Any]] = []
    servers = plan(st, queues or [])
    for server in servers:
        rows += examine(st, server)
    several = len({row["server"] for row in rows}) > 1  # (a cluster: one per primary)
    columns = [c for c in COLUMNS if c.key != "server" or several or out.json]
    out.rows(rows, columns, title=None if several or not rows else rows[0]["server"])
    conclude(rows)


def plan(st: State, names: list[str]) -> list[Server]:
    """The servers to examine, each with its queues, in the order first met."""
    servers: dict[str, Server] = {}

    def server_of(url: str, opener: Any) -> Server:
        if url not in servers:
            try:
                servers[url] = Server(url, opener())
            except ServerError as err:  # (a cluster reads its topology when opened)
                servers[url] = Server(url, None, str(err))
        return servers[url]

    for name in names or list(st.config.queues):
        spec = st.spec(name)
        server = server_of(spec.url, lambda s=spec: st.client(s.url, s.password, s))
        server.queues.append((name, spec.prefix))
        server.options[name] = st.options(spec.options)
    if not servers:  # nothing named or configured: the default server, and its queues
        for found in st.servers():
            server = server_of(found.url, lambda f=found: st.server_client(f))
            server.queues += [(prefix, prefix) for prefix in _discover(server)]
            server.options.update({prefix: st.options(st.config.options())
                                   for _, prefix in server.queues})
    return list(servers.values())


def _discover(server: Server) -> list[str]:
    from ..core.fleet.discover import discover_queues

    if server.client is None:
        return []
    try:
        return discover_queues(server.client)
    except Exception:  # unreachable: the checks say so
        return []


def examine(st: State, server: Server) -> list[dict[str, Any]]:
    """The rows of one server: its checks, then each queue's; a server that cannot be
    reached is one ``connect`` fail saying why."""
    from ..connection.connect import mask_url
    from ..core.scripting.calling import functions_allowed
    from ..health import doctor as health
    from ..health.acl import queue_checks
    from ..health.durable import durability

    where = mask_url(server.url)
    checks: list[tuple[str, str | None, Check]] = []  # (node, queue, check)
    try:
        if server.error is not None:
            raise ServerError(server.error)
        found = health.nodes(server.client)  # a cluster: each primary
        fcall = found[0][0] == "" and functions_allowed()
        for node, client in found:
            checks += [(node, None, c) for c in health.server_checks(client, fcall=fcall)]
        for name, prefix in server.queues:
            client = health.node_of(server.client, prefix)
            checks.append(("", name, presence(server, name, prefix)))
            places = _places(server, prefix)
            checks.append(("", name, health.generations(places)))
            if (limited := health.limits(places)) is not None:
                checks.append(("", name, limited))
            sharded = name in st.config.queues and st.spec(name).shards is not None
            checks += [("", name, c) for c in queue_checks(client, prefix, sharded=sharded)]
            checks.append(("", name, durability(client, server.options[name])))
            if sharded:
                from ..health.shards import shard_checks

                checks += [("", name, c) for c in shard_checks(server.client, prefix,
                                                                st.spec(name).shards)]
    except Exception as exc:
        reason = _unreachable(st, server.url, exc)
        return [{"server": where, "queue": None, "check": "connect", "status": health.FAIL,
                 "detail": reason, "fix": "start the server, or fix its URL or password "
                 "(--url, the config, $RQ_CLI_URL) and the network between"}]
    return [{"server": f"{where} ({node})" if node else where, "queue": name,
             "check": c.check, "status": c.status, "detail": c.detail, "fix": c.fix}
            for node, name, c in checks]


def _places(server: Server, prefix: str) -> list[tuple[Any, str]]:
    """(client, prefix) of the queue, or of each shard (live, then draining) where the
    server records it as sharded: where its processing ids are."""
    from ..core.sharding.shardmeta import read
    from ..health.doctor import is_connection_error, node_of

    try:
        meta = read(server.client, prefix)
        prefixes = [*meta.live, *meta.draining_prefixes()] if meta.count else [prefix]
    except Exception as exc:  # (refused by the ACL: the queue's own keys are looked at)
        if is_connection_error(exc):
            raise
        prefixes = [prefix]
    return [(node_of(server.client, p), p) for p in prefixes]


def presence(server: Server, name: str, prefix: str) -> Check:
    """``queue``: a fail when the queue has no key and no counter on its server (a wrong URL,
    database or prefix, a new empty server): no check of it can be green (exit 6)."""
    from ..core.queue import WorkQueue
    from ..health.doctor import FAIL, OK, WARN, Check, is_connection_error, reason
    from .monitor import absent

    try:
        from ..core.sharding import shardmeta

        if shardmeta.read(server.client, prefix).count:  # a sharded queue: its shards' counts
            from ..core.sharding.sharded import ShardedQueue

            found = ShardedQueue(server.client, prefix).stats()
        else:
            found = WorkQueue(server.client, prefix).stats()
    except Exception as exc:
        if is_connection_error(exc):
            raise
        return Check("queue", WARN, f"could not read the queue's counts: {reason(exc)}",
                     "allow the commands the manual's 'ACL' (Deployments) lists "
                     "(the acl check says which)")
    if not found.exists:
        return Check("queue", FAIL, absent(name, server.url),
                     "check the URL, database and prefix (rq-cli queues lists the queues on "
                     "the server); a relative embedded: is another server in each directory")
    return Check("queue", OK, f"found: {found.pending} pending, {found.processing} "
                 f"processing, {found.delayed} delayed, {found.dead} dead")


def _unreachable(st: State, url: str, exc: Exception) -> str:
    """Why the server could not be reached (one line, secrets scrubbed); anything that is
    not the server's doing is raised (a bug)."""
    from ..connection.connect import translate_error
    from ..ops.scrub import scrub

    err = exc if isinstance(exc, RqError) else translate_error(exc, url, read_only=True)
    if not isinstance(err, ServerError):
        raise exc
    return " ".join(scrub(str(err), st).split())


def conclude(rows: list[dict[str, Any]]) -> None:
    """Exit 6 if a server could not be reached or a queue has never existed on it (the state
    is unknown), 5 if a check failed, 7 on warnings only."""
    failed = [r for r in rows if r["status"] == "fail"]
    warned = [r for r in rows if r["status"] == "warn"]
    counts = f"{len(failed)} failed, {len(warned)} warning{'s' if len(warned) != 1 else ''}"
    if not failed and not warned:
        return
    unreachable = [r for r in failed if r["check"] in UNKNOWN]
    first = (unreachable or failed or warned)[0]
    what = f"doctor: {counts}; {first['server']} {first['check']}: {first['detail']}"
    if first.get("fix"):  # (a table at 80 columns leaves the fix out: here it is)
        what += f"; fix: {first['fix']}"
    if unreachable:
        raise CheckUnknown(what)
    if failed:
        raise CheckFailed(what)
    raise CheckWarned(what)


def warn_risks(out: Output, clients: Mapping[str, Any]) -> None:
    """``stats`` and ``server status`` on a terminal: one stderr line per server (URL ->
    client) that can lose work (no persistence, eviction); one round trip each. Nothing when
    the output is JSON: a script gets ``doctor`` for that, and no extra round trip."""
    if out.json:
        return
    from ..connection.connect import mask_url
    from ..health.doctor import nodes, risks

    for url, client in clients.items():
        found = [risk for _, node in nodes(client) for risk in risks(node)]
        if found:
            out.message(f"rq-cli: warning: {mask_url(url)} {'; it '.join(found)} (see rq-cli "
                        "doctor)")
