"""Durability: a write is acknowledged only once replicas (and disks) hold it.

Replication is asynchronous: a write the primary made and answered may not have reached any
replica when the primary dies, and a failover then throws it away (the manual's "Guarantees").
With ``QueueOptions.wait_replicas = N`` (or ``wait_fsync``) every script call that changes
what a failover could lose (:data:`CONFIRMED`) is sent in one pipeline with

- ``WAIT N timeout_ms``: the number of replicas that hold every write of this connection so
  far; or, with ``wait_fsync``,
- ``WAITAOF 1 N timeout_ms``: the primary's append-only file and N replicas' have it on disk
  (Redis >= 7.2 and Valkey have WAITAOF; Redis 7.0 and 6.2 do not: a :class:`ConfigError`
  before the first write, found once per :class:`Confirmer` with one probe), after a short
  ``WAIT N`` that makes the replicas report their disk at once (limits.WAITAOF_NUDGE).

One round trip per call, as without it; bulk push sends one WAIT after each batch
(core/pushing/bulk.py). A write confirmed by fewer replicas than asked in time is neither success
nor failure: :class:`rq_cli.errors.Unconfirmed` (exit 8), never retried here. A primary
demoted by a failover it did not see answers WAIT with 0, so nothing written there is
acknowledged; behind Sentinel, an unconfirmed write also drops the idle connections, so the
next call asks the sentinels where the primary is now (:func:`follow_primary`), and so does
any write a second or more after the last ask (ROLE_CHECK, as the worker does): a client
whose writes are all confirmed still leaves a demoted primary.

``wait_replicas = "all"`` waits for every replica the deployment has: behind Sentinel, the
replicas the sentinels list (down or not: a replica cut off is exactly what must not be
counted out), asked again with each role check; else the replicas connected to the queue's
primary when the queue first writes (:func:`replica_count`). A partition that leaves the
primary with fewer then confirms nothing there (exit 8), whichever side the sentinels
promote.

This module imports neither Typer nor rich, nor redis-py at the top.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from ...errors import ConfigError, Unconfirmed
from ..contract.limits import ALL_REPLICAS, ROLE_CHECK, WAITAOF_NUDGE
from ..contract.specs import HEAD, SPECS
from ..contract.util import is_cluster
from ..types import QueueOptions

#: The scripts whose writes are confirmed (``lease`` too when it carries completes: the
#: worker's complete_and_lease).
CONFIRMED = frozenset({"push", "complete", "fail", "cancel", "release", "requeue_dead",
                       "purge", "purge_ids", "complete_result"})

#: The WAIT before each WAITAOF, at most (milliseconds).
NUDGE_MS = round(WAITAOF_NUDGE * 1000)

#: Servers with WAITAOF, for messages and docs.
WAITAOF_SERVERS = "Redis 7.2 or later, or Valkey"


def wrote(name: str, argv: Sequence[Any], reply: Any) -> bool:
    """Whether script ``name`` (called with ``argv``) changed anything, by its reply: False
    for a dry run, a purge step that removed nothing and a requeue-dead that requeued
    nothing (each such call writes nothing, so there is nothing to confirm, and a shortfall
    of replicas is no error). True when unsure."""
    spec = SPECS[name]
    if "dry_run" in spec.args and str(argv[len(HEAD) + spec.args.index("dry_run")]) == "1":
        return False
    if name == "purge":
        return int(reply) != 0
    if name == "purge_ids":
        return bool(reply)
    if name == "requeue_dead":
        return int(spec.decode(reply).fields["requeued"]) != 0
    return True


def confirms(name: str, rest: Sequence[Any]) -> bool:
    """Whether script ``name`` called with the repeated arguments ``rest`` is confirmed."""
    return name in CONFIRMED or (name == "lease" and bool(rest))


def sentinel_pool(client: Any) -> Any:
    """The redis-py SentinelConnectionPool of a client of a Sentinel service's primary, else
    None."""
    pool = getattr(client, "connection_pool", None)
    if pool is None or type(pool).__name__ != "SentinelConnectionPool" or \
            not getattr(pool, "is_master", False):
        return None
    return pool


def follow_primary(client: Any) -> bool:
    """Behind Sentinel: ask the sentinels where the primary is; where it moved, redis-py's
    pool drops its idle connections to the old one, so the next call reaches the new one.
    True when it moved. Nothing (False) for any other client. A role check that costs one
    sentinel round trip: the worker runs it with its heartbeat, a durable queue before a
    write a second or more after the last, and every unconfirmed write runs it (a demoted
    primary still answering as one confirms nothing)."""
    pool = sentinel_pool(client)
    if pool is None:
        return False
    before = getattr(pool, "master_address", None)
    try:
        now = pool.get_master_address()
    except Exception:  # (no sentinel answers: the next call says so)
        return False
    return before is not None and now != before


def listed_replicas(client: Any) -> int | None:
    """Behind Sentinel: how many replicas the sentinels list for the service (SENTINEL
    REPLICAS of the first sentinel that answers; down ones included). None for any other
    client, or when no sentinel answers."""
    pool = sentinel_pool(client)
    if pool is None:
        return None
    for sentinel in pool.sentinel_manager.sentinels:
        try:
            return len(sentinel.execute_command("SENTINEL", "REPLICAS", pool.service_name))
        except Exception:  # (this sentinel is down or cut off: the next one)
            continue
    return None


def connected_replicas(client: Any, key: str | None = None) -> int:
    """The replicas connected to the primary that holds ``key`` (a Cluster's node of it;
    INFO replication's connected_slaves)."""
    if is_cluster(client) and key is not None:
        info = client.info("replication", target_nodes=client.get_node_from_key(key))
    else:
        info = client.info("replication")
    if isinstance(info, dict) and "connected_slaves" not in info and len(info) == 1:
        info = next(iter(info.values()))  # (a Cluster's reply: one node's, by its name)
    return int(info.get("connected_slaves", 0))


def replica_count(client: Any, key: str | None = None) -> tuple[int, str]:
    """``wait_replicas = "all"`` resolved: (count, where it was read: "sentinels" or
    "primary")."""
    listed = listed_replicas(client)
    if listed is not None:
        return listed, "sentinels"
    return connected_replicas(client, key), "primary"


class Confirmer:
    """Sends the WAIT (or WAITAOF) after each write of one queue, and judges its reply."""

    def __init__(self, client: Any, options: QueueOptions) -> None:
        self.client = client
        #: ``"all"`` or a count; :attr:`replicas` is the count (resolved by :meth:`prepare`)
        self.wanted = options.wait_replicas
        self.replicas = 0 if self.wanted == ALL_REPLICAS else int(self.wanted)
        self.timeout = options.wait_timeout
        self.fsync = options.wait_fsync
        self.timeout_ms = max(round(options.wait_timeout * 1000), 1)
        self._checked = not self.fsync  # WAITAOF probed (only wait_fsync needs it)
        self._resolved = self.wanted != ALL_REPLICAS
        self._role_due = time.monotonic() + ROLE_CHECK  # (connecting asked the sentinels)

    def prepare(self, key: str | None = None) -> None:
        """Before a write: behind Sentinel, the role check and the sentinels' replica list
        (``"all"``) once ROLE_CHECK seconds have passed since the last; ``"all"`` resolved
        once otherwise; the WAITAOF probe (:meth:`check_server`)."""
        now = time.monotonic()
        if now >= self._role_due and sentinel_pool(self.client) is not None:
            self._role_due = now + ROLE_CHECK
            self._role_check()
        if not self._resolved:
            self.replicas, _ = replica_count(self.client, key)
            self._resolved = True
        self.check_server()

    def _role_check(self) -> None:
        """Behind Sentinel: ``"all"``'s count from the sentinels' list, then where the
        primary is (:func:`follow_primary`)."""
        if self.wanted == ALL_REPLICAS:
            listed = listed_replicas(self.client)
            if listed is None:  # no sentinel answers: the count stands (and asking them
                return  # where the primary is would wait out each one again)
            self.replicas, self._resolved = listed, True
        follow_primary(self.client)

    def wanted_text(self) -> str:
        """The setting as messages show it: ``1``, or ``all (2)``."""
        if self.wanted == ALL_REPLICAS:
            return f"{ALL_REPLICAS} ({self.replicas})"
        return str(self.replicas)

    def commands(self) -> list[tuple[Any, ...]]:
        """The commands sent after a write: WAIT, or WAITAOF (which implies it), after a
        WAIT of at most WAITAOF_NUDGE that makes the replicas report their disk in
        milliseconds rather than within a second (see core/contract/limits.py)."""
        if self.fsync:
            waitaof = ("WAITAOF", 1, self.replicas, self.timeout_ms)
            if self.replicas == 0:  # (the primary's own disk: no replica to ask)
                return [waitaof]
            return [("WAIT", self.replicas, min(self.timeout_ms, NUDGE_MS)), waitaof]
        return [("WAIT", self.replicas, self.timeout_ms)]

    def check_server(self) -> None:
        """Before the first write with ``wait_fsync``: the server has WAITAOF and keeps an
        append-only file, or a ConfigError (nothing written yet). One probe, once."""
        if self._checked:
            return
        from redis.exceptions import ResponseError  # (see calling.py)

        try:
            self._send(self.client, ("WAITAOF", 1, 0, 1))
        except ResponseError as exc:
            message = str(exc)
            if "unknown command" in message.lower():
                raise ConfigError(
                    f"wait_fsync = true needs the WAITAOF command, which this server lacks "
                    f"({WAITAOF_SERVERS} have it; Redis 7.0 does not): set wait_fsync = "
                    f"false (WAIT alone: replicas hold the write in memory)") from None
            if "appendonly" in message.lower():
                raise ConfigError("wait_fsync = true needs the append-only file on the "
                                  "server (appendonly yes): the write cannot be on disk "
                                  "otherwise") from None
            raise
        self._checked = True

    def _send(self, client: Any, command: tuple[Any, ...], key: str | None = None) -> Any:
        if is_cluster(client) and key is not None:  # (the node that holds the queue)
            return client.execute_command(*command,
                                          target_nodes=client.get_node_from_key(key))
        return client.execute_command(*command)

    def wait_after(self, key: str) -> list[Any]:
        """A cluster client (no EVALSHA in its pipelines): the WAIT sent on its own, to the
        node of ``key``, after the write (two round trips; the node's pool hands back the
        connection just used, LIFO, so WAIT counts that write)."""
        from redis.exceptions import ResponseError

        out: list[Any] = []
        for command in self.commands():
            try:
                out.append(self._send(self.client, command, key))
            except ResponseError as exc:
                out.append(exc)
        return out

    def shortfall(self, replies: Sequence[Any]) -> str | None:
        """None when the replies to :meth:`commands` confirm the write, else what fell
        short, as a phrase. With ``wait_fsync`` WAITAOF's reply decides (the WAIT before
        it only hurries the replicas)."""
        if self.fsync:
            replies = replies[-1:]
        for reply in replies:
            if isinstance(reply, Exception):
                return f"the server refused to confirm it ({str(reply).splitlines()[0]})"
            if isinstance(reply, (list, tuple)):  # WAITAOF: [local, replicas]
                local, got = int(reply[0]), int(reply[1])
                if local < 1:
                    return (f"the primary did not write it to disk within {self.timeout:g} s "
                            "(wait_fsync)")
                if got < self.replicas:
                    return (f"{got} of {self.replicas} replicas wrote it to disk within "
                            f"{self.timeout:g} s (wait_replicas = {self.wanted_text()}, "
                            "wait_fsync)")
            elif int(reply) < self.replicas:
                return (f"{int(reply)} of {self.replicas} replicas confirmed it within "
                        f"{self.timeout:g} s (wait_replicas = {self.wanted_text()})")
        return None

    def unconfirmed(self, what: str, why: str, ids: Sequence[str] = (),
                    reply: Any = None) -> Unconfirmed:
        """The error for a write made and not confirmed (after a role check: behind
        Sentinel, a demoted primary's idle connections are dropped)."""
        moved = follow_primary(self.client)
        note = "; the primary has moved (failover): the next call goes to the new one" \
            if moved else ""
        return Unconfirmed(f"{what} was made on the server but not confirmed: {why}; it may be "
                           f"lost if the primary fails now (nothing was retried){note}",
                           ids=list(ids), reply=reply)

    def run(self, caller: Any, name: str, keys: Sequence[Any], argv: Sequence[Any]) -> Any:
        """Script ``name``'s reply once the write is confirmed, in one round trip (the
        script and the WAIT in one pipeline); :class:`Unconfirmed` (its ``reply`` the
        script's) when it is not."""
        self.prepare(keys[0] if keys else None)
        if is_cluster(self.client):
            reply = caller.run(name, keys, argv)
            waits = self.wait_after(keys[0])
        else:
            (reply,), waits = caller.run_with(name, [(keys, argv)], self.commands())
            if isinstance(reply, Exception):
                raise reply
        why = self.shortfall(waits)
        if why is not None and wrote(name, argv, reply):
            raise self.unconfirmed("the write", why, reply=reply)
        return reply
