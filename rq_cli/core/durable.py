"""Durability: a write is acknowledged only once replicas (and disks) hold it.

Replication is asynchronous: a write the primary made and answered may not have reached any
replica when the primary dies, and a failover then throws it away (the manual's "Guarantees").
With ``QueueOptions.wait_replicas = N`` (or ``wait_fsync``) every script call that changes
what a failover could lose (:data:`CONFIRMED`) is sent in one pipeline with

- ``WAIT N timeout_ms``: the number of replicas that hold every write of this connection so
  far; or, with ``wait_fsync``,
- ``WAITAOF 1 N timeout_ms``: the primary's append-only file and N replicas' have it on disk
  (Redis >= 7.2 and Valkey have WAITAOF; Redis 7.0 and 6.2 do not: a :class:`ConfigError`
  before the first write, found once per :class:`Confirmer` with one probe).

One round trip per call, as without it; bulk push sends one WAIT after each batch
(core/bulk.py). A write confirmed by fewer replicas than asked in time is neither success
nor failure: :class:`rq_cli.errors.Unconfirmed` (exit 8), never retried here. A primary
demoted by a failover it did not see answers WAIT with 0, so nothing written there is
acknowledged; behind Sentinel, an unconfirmed write also drops the idle connections, so the
next call asks the sentinels where the primary is now (:func:`follow_primary`).

This module imports neither Typer nor rich, nor redis-py at the top.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import ConfigError, Unconfirmed
from .specs import HEAD, SPECS
from .types import QueueOptions
from .util import is_cluster

#: The scripts whose writes are confirmed (``lease`` too when it carries completes: the
#: worker's complete_and_lease).
CONFIRMED = frozenset({"push", "complete", "fail", "cancel", "release", "requeue_dead",
                       "purge", "purge_ids"})

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


def follow_primary(client: Any) -> bool:
    """Behind Sentinel: ask the sentinels where the primary is; where it moved, redis-py's
    pool drops its idle connections to the old one, so the next call reaches the new one.
    True when it moved. Nothing (False) for any other client. A role check that costs one
    sentinel round trip: the worker runs it with its heartbeat, and every unconfirmed write
    runs it (a demoted primary still answering as one confirms nothing)."""
    pool = getattr(client, "connection_pool", None)
    if pool is None or type(pool).__name__ != "SentinelConnectionPool" or \
            not getattr(pool, "is_master", False):
        return False
    before = getattr(pool, "master_address", None)
    try:
        now = pool.get_master_address()
    except Exception:  # (no sentinel answers: the next call says so)
        return False
    return before is not None and now != before


class Confirmer:
    """Sends the WAIT (or WAITAOF) after each write of one queue, and judges its reply."""

    def __init__(self, client: Any, options: QueueOptions) -> None:
        self.client = client
        self.replicas = options.wait_replicas
        self.timeout = options.wait_timeout
        self.fsync = options.wait_fsync
        self.timeout_ms = max(round(options.wait_timeout * 1000), 1)
        self._checked = not self.fsync  # WAITAOF probed (only wait_fsync needs it)

    def commands(self) -> list[tuple[Any, ...]]:
        """The commands sent after a write: WAIT, or WAITAOF (which implies it)."""
        if self.fsync:
            return [("WAITAOF", 1, self.replicas, self.timeout_ms)]
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
        short, as a phrase."""
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
                            f"{self.timeout:g} s (wait_replicas, wait_fsync)")
            elif int(reply) < self.replicas:
                return (f"{int(reply)} of {self.replicas} replicas confirmed it within "
                        f"{self.timeout:g} s (wait_replicas)")
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
        self.check_server()
        if is_cluster(self.client):
            reply = caller.run(name, keys, argv)
            waits = self.wait_after(keys[0])
        else:
            reply, waits = self._pipelined(caller, name, keys, argv)
        why = self.shortfall(waits)
        if why is not None and wrote(name, argv, reply):
            raise self.unconfirmed("the write", why, reply=reply)
        return reply

    def _pipelined(self, caller: Any, name: str, keys: Sequence[Any],
                   argv: Sequence[Any]) -> tuple[Any, list[Any]]:
        for attempt in (1, 2):
            pipe = self.client.pipeline(transaction=False)
            caller.send(pipe, name, keys, argv)
            for command in self.commands():
                pipe.execute_command(*command)
            reply, *waits = pipe.execute(raise_on_error=False)
            if isinstance(reply, Exception):
                if attempt == 1 and caller.recover(reply, name):
                    continue  # (NOSCRIPT, or the library gone: loaded; nothing ran)
                raise reply
            return reply, waits
        raise AssertionError("not reached")  # pragma: no cover
