"""What every command shares: the per-invocation state, option aliases, small helpers.

Nothing here talks to the server at import time: the config is read and the connection made
only when a command asks for a queue, so ``--help`` and completion never touch the network.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from enum import Enum
from functools import cached_property
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple, TypeVar, cast

import typer

from ..core.codes import Outcome
from ..core.contract.env import ENV_JSON
from ..core.contract.limits import MAX_LEASE_SECONDS
from ..core.types import NO_TLS, QueueOptions, TlsOptions
from ..errors import (
    LeaseLost,
    NothingToDo,
    RqError,
    ServerError,
    UsageError,
    WrongTypeError,
)
from ..output.render import Output, Terminal, message
from ..settings import config as configmod
from .reading import check_utf8

if TYPE_CHECKING:
    from pathlib import Path

    from ..core.queue import WorkQueue
    from ..core.types import ItemOutcome

T = TypeVar("T")

#: Connect timeout, seconds (reads wait longer: see connect.client_options).
SOCKET_TIMEOUT = 5.0



class Server(NamedTuple):
    """Where a server is and how to reach it (:meth:`State.servers`)."""

    url: str
    password: str | None
    tls: TlsOptions

class State:
    """Global options of one invocation, and the lazily opened config and connections."""

    def __init__(self, *, url: str | None = None, config_path: str | None = None,
                 no_config: bool = False, raw_prefix: bool = False, as_json: bool = False,
                 terminal: Terminal | None = None,
                 durability: dict[str, Any] | None = None) -> None:
        self.url = url
        #: --wait-replicas, --wait-timeout (or $RQ_CLI_WAIT_*): over every queue's options
        self.durability = durability or {}
        self.config_path = config_path
        self.no_config = no_config
        self.raw_prefix = raw_prefix
        self.as_json = as_json
        self.terminal = terminal or Terminal()
        self._clients: dict[tuple[str, str | None, TlsOptions], Any] = {}
        self.urls_used: list[str] = []  # for error messages: the servers we talked to
        self.secrets: list[str] = []  # passwords to scrub from any message
        self._server_specs: dict[Server, configmod.QueueSpec] = {}  # whose URL it is
        self.read_only = False  # the command changes nothing (errors say nothing changed)
        self.opened: list[WorkQueue] = []  # the queues of this run (WRONGTYPE: which key)
        self.notes: set[str] = set()  # notes said once per process (a shard count followed)

    @cached_property
    def config(self) -> configmod.Config:
        return configmod.load(self.config_path, no_config=self.no_config)

    def spec(self, name: str) -> configmod.QueueSpec:
        check_utf8(name, "the queue name")
        spec = self.config.resolve(name, url=self.url, raw_prefix=self.raw_prefix)
        if spec.password:
            self.secrets.append(spec.password)
        return spec

    def client(self, url: str, password: str | None = None,
               spec: configmod.QueueSpec | None = None, tls: TlsOptions | None = None) -> Any:
        """One client per server: queues on the same server share it.

        A URL the config file gave (``spec``) that cannot be used is a config error (78)
        naming the file and line; one from ``--url`` or the environment, a usage error (2).
        ``tls`` (default: the spec's) are the server's TLS settings; a TLS connection that
        will not verify the server's certificate is announced on stderr, once per server.
        """
        if tls is None:
            tls = spec.tls if spec is not None else NO_TLS
        key = (url, password, tls)
        if key not in self._clients:
            from ..connection.connect import connect, mask_url, tls_unverified

            self.urls_used.append(url)
            try:
                self._clients[key] = connect(url, password=password, timeout=SOCKET_TIMEOUT,
                                             tls=tls, on_new_embedded=self._new_embedded)
            except UsageError as err:
                if spec is not None and spec.url_source in ("queue", "file"):
                    raise self.config.url_error(spec, str(err)) from None
                raise
            if tls_unverified(url, tls):
                message(f"rq-cli: warning: TLS certificate verification is off for "
                        f"{mask_url(url)} (tls_insecure): the server is not authenticated")
        return self._clients[key]

    def _new_embedded(self, data_dir: Path) -> None:
        """``embedded:`` made a new, empty server: say so on stderr, terminal or not (from
        another directory, ``./.rq-cli`` is another server, with none of the queues; cron
        mails what a job prints on stderr)."""
        message(f"rq-cli: note: started a new, empty embedded server in {data_dir} (none "
                f"existed there; ./.rq-cli is relative to the working directory: for cron "
                f"or another directory use embedded:{data_dir})")

    def queue(self, name: str) -> WorkQueue:
        from ..core.operations.audit import bind
        from ..core.queue import WorkQueue

        spec = self.spec(name)
        client = self.client(spec.url, spec.password, spec)
        if spec.shards is not None:  # a sharded queue offers WorkQueue's operations
            from ..core.sharding.sharded import ShardedQueue

            sq = ShardedQueue(client, spec.prefix, spec.options, shards=spec.shards, name=name)
            bind(sq)  # (the audit trail of the command's repairs: its first queue's)
            note = sq.count_note()
            if note is not None and note not in self.notes:  # once per queue per process
                self.notes.add(note)
                message(note)
            return cast("WorkQueue", sq)
        wq = WorkQueue(client, spec.prefix, self.options(spec.options))
        bind(wq)
        self.opened.append(wq)
        return wq

    def queues(self, names: list[str]) -> list[WorkQueue]:
        return [self.queue(name) for name in names]

    def raw_queue(self, prefix: str, server: Server) -> WorkQueue:
        """A queue found on a server (not named by the user): default options; a sharded
        queue's base prefix (the server records its shards) opens it as a sharded queue."""
        from ..core.queue import WorkQueue
        from ..core.sharding.shardmeta import read

        client = self.server_client(server)
        options = self.options(self.config.options())
        if read(client, prefix).count:
            from ..core.sharding.sharded import ShardedQueue

            return cast("WorkQueue", ShardedQueue(client, prefix, options))
        return WorkQueue(client, prefix, options)

    def options(self, options: QueueOptions) -> QueueOptions:
        """A queue's options with the durability flags over them."""
        if not self.durability:
            return options
        from dataclasses import replace

        return replace(options, **self.durability)

    def server_client(self, server: Server) -> Any:
        """The client of one of :meth:`servers` (a URL from the file that cannot be used is
        a config error naming the file and line, as for a named queue)."""
        return self.client(server.url, server.password, self._server_specs.get(server),
                           tls=server.tls)

    def targets(self, names: list[str], discover: bool, failed: Failures | None = None,
                rows: list[dict[str, Any]] | None = None) -> list[tuple[str, WorkQueue]]:
        """Named queues; else the configured ones; plus (or, with none configured) discovered.

        A server that cannot be searched is an error row in ``rows`` (``failed`` counts it);
        without ``rows``, its error is raised.
        """
        targets = [(name, self.queue(name)) for name in (names or list(self.config.queues))]
        if discover or not targets:
            from ..connection.connect import mask_url
            from ..core.fleet.discover import discover_queues

            seen = {(id(wq.client), wq.prefix) for _, wq in targets}
            for server in self.servers():
                fails = failed or Failures("discover")
                client = self.server_client(server)
                found, error = fails.run(server.url,
                                         functools.partial(discover_queues, client))
                if error is not None:
                    if rows is None:
                        fails.check()
                    else:
                        rows.append({"queue": None, "url": mask_url(server.url),
                                     "error": error})
                for prefix in found or []:
                    if (id(client), prefix) not in seen:
                        seen.add((id(client), prefix))
                        targets.append((prefix, self.raw_queue(prefix, server)))
        return targets

    def servers(self) -> list[Server]:
        """(url, password, tls) of every server in play: the configured queues' and the
        default."""
        found: list[Server] = []
        specs = [self.spec(name) for name in self.config.queues]
        specs.append(self.config.resolve("default", url=self.url, raw_prefix=True))
        for spec in specs:
            server = Server(spec.url, spec.password, spec.tls)
            if server not in found:
                found.append(server)
                self._server_specs[server] = spec
        return found

    def url_of(self, client: Any) -> str:
        """The URL a client of this invocation was opened for ('' if not ours)."""
        for (url, _, _), known in self._clients.items():
            if known is client:
                return url
        return ""

    def output(self, as_json: bool = False) -> Output:
        return Output(self.terminal, as_json=as_json or self.as_json)

    def default_url(self) -> str:
        return self.config.default_url(url=self.url)

    def close(self) -> None:
        for client in self._clients.values():
            with contextlib.suppress(Exception):  # closing is best effort
                client.close()


#: Commands (and Failures verbs) that only read: an error mid-command changed nothing.
READ_ONLY = frozenset({"stats", "peek", "queues", "holders", "discover", "audit"})


class Failures:
    """Queues of a multi-queue command (``stats``, ``queues``, ``clean --all``) whose server
    failed: each becomes an error row and the command goes on with the next queue; at the
    end :meth:`check` ends the command with exit 69 and one stderr line.
    """

    def __init__(self, verb: str) -> None:
        self.verb = verb
        self.errors: list[str] = []
        self.tried = 0

    def run(self, url: str, call: Callable[[], T],
            queue: WorkQueue | None = None) -> tuple[T | None, str | None]:
        """``(call(), None)``, or ``(None, message)`` if the server failed (exit 69 errors:
        unreachable, refusing, wrong key type: of ``queue``, named). Anything else is raised."""
        from ..connection.connect import translate_error

        self.tried += 1
        try:
            return call(), None
        except Exception as exc:
            err = exc if isinstance(exc, RqError) else \
                translate_error(exc, url, read_only=self.verb in READ_ONLY)
            if not isinstance(err, ServerError):
                raise
            if isinstance(err, WrongTypeError) and queue is not None:
                err = name_wrong_type(err, [queue])
            self.errors.append(str(err))
            return None, str(err)

    def check(self) -> None:
        if self.errors:
            rest = ", the rest is shown" if self.tried > len(self.errors) else ""
            raise ServerError(f"{self.verb}: {len(self.errors)} of {self.tried} failed{rest}: "
                              f"{self.errors[0]}")


def name_wrong_type(err: WrongTypeError, queues: list[WorkQueue]) -> RqError:
    """``err`` naming the key of the wrong type, found among ``queues`` (the first 10; one
    pipeline each), or ``err`` as it is when none is found (or the probe fails too)."""
    if str(err).startswith("key "):  # (a script's own reply names it already)
        return err
    for wq in queues[:10]:
        try:
            found = wq.wrong_type_key()
        except Exception:  # the message is best effort: keep the original error
            return err
        if found is not None:
            key, got, want = found
            where = str(err).split(" on ", 1)[1].split(" holds ", 1)[0]
            return WrongTypeError(
                f"key {key!r} on {where} holds a {got}, not a {want} (WRONGTYPE): the prefix "
                f"is used by something else; choose another prefix, or inspect and remove "
                f"that key")
    return err


def state(ctx: typer.Context) -> State:
    """The State of this invocation (made by the app callback)."""
    root = ctx.find_root()
    if not isinstance(root.obj, State):  # a command invoked on its own (tests)
        root.obj = State(terminal=root.obj if isinstance(root.obj, Terminal) else None)
    return root.obj


def complete_queue(ctx: typer.Context, incomplete: str) -> list[str]:
    """Shell completion of QUEUE: the names of the config file. Never touches the network."""
    params = ctx.find_root().params
    try:
        cfg = configmod.load(params.get("config"), no_config=bool(params.get("no_config")))
    except Exception:  # completion must never fail loudly
        return []
    return [name for name in cfg.queues if name.startswith(incomplete)]


# -- choices -----------------------------------------------------------------------------------
class Order(str, Enum):
    strict = "strict"
    fair = "fair"


class End(str, Enum):
    head = "head"
    tail = "tail"


# -- option aliases, defined once ---------------------------------------------------------------
QueueArg = Annotated[str, typer.Argument(
    help="A queue name from the config file, or else the key prefix itself.",
    autocompletion=complete_queue, show_default=False, metavar="QUEUE")]
QueuesArg = Annotated[list[str], typer.Argument(
    help="One or more queues (config names or key prefixes).",
    autocompletion=complete_queue, show_default=False, metavar="QUEUE")]
OptQueuesArg = Annotated[list[str] | None, typer.Argument(
    help="Queues (config names or key prefixes); default: every queue of the config file.",
    autocompletion=complete_queue, show_default=False, metavar="QUEUE")]
IdsArg = Annotated[list[str] | None, typer.Argument(
    help="Item ids; '-' (or no ids with stdin not a terminal) reads ids, or the JSON lines "
         "lease/peek print, from stdin.", show_default=False, metavar="ID")]
JsonOpt = Annotated[bool, typer.Option(
    "--json", help="Print JSON lines even on a terminal.", envvar=ENV_JSON,
    show_envvar=True)]
RawOpt = Annotated[bool, typer.Option(
    "--raw", help="Print only the bare data of each item, one per line.")]
DryRunOpt = Annotated[bool, typer.Option(
    "--dry-run", help="Report what would be done, change nothing.")]
LeaseOpt = Annotated[float | None, typer.Option(
    "--lease", min=0.001, max=MAX_LEASE_SECONDS, metavar="SECONDS", show_default=False,
    help="Lease time in seconds (default: the queue's lease_seconds, "
         f"{QueueOptions.lease_seconds:g}).")]


# -- helpers ----------------------------------------------------------------------------------
def read_stdin(args: list[str] | None, terminal: Terminal) -> bool:
    """True when input comes from stdin: ``-``, or no arguments and stdin not a terminal."""
    if args == ["-"]:
        return True
    if args and "-" in args:
        raise UsageError("'-' (read stdin) cannot be mixed with other arguments")
    return not args and not terminal.stdin_isatty()


def outcome_rows(name: str, outcomes: list[ItemOutcome]) -> list[dict[str, Any]]:
    from ..output.shapes import outcome_row

    return [outcome_row(name, o) for o in outcomes]


def check_outcomes(outcomes: list[ItemOutcome], verb: str) -> None:
    """Raise the exit code of a complete/fail/extend call: 4 beats 3 beats success."""
    lost = [o.id for o in outcomes if o.outcome in (Outcome.CONFLICT, Outcome.LOST)]
    missing = [o.id for o in outcomes if o.outcome == Outcome.MISSING]
    dead = [o.id for o in outcomes if o.outcome == Outcome.ALREADY_DEAD]
    idle = [o.id for o in outcomes if o.outcome == Outcome.NOT_LEASED]
    if lost:
        raise LeaseLost(f"could not {verb} {_some(lost)}: the lease is held by another "
                        f"session or has expired{_also(missing + dead + idle)}")
    if dead:
        raise NothingToDo(f"could not {verb} {_some(dead)}: dead-lettered, not live "
                          f"(requeue-dead puts it back in line){_also(missing + idle)}")
    if idle:
        raise NothingToDo(f"could not {verb} {_some(idle)}: pending, never leased (lease it "
                          f"first; purge deletes items no worker should take){_also(missing)}")
    if missing:
        raise NothingToDo(f"could not {verb} {_some(missing)}: no such live item "
                          f"(already completed, or never pushed)")


def _some(ids: list[str], shown: int = 3) -> str:
    head = ", ".join(repr(i) for i in ids[:shown])
    more = f" and {len(ids) - shown} more" if len(ids) > shown else ""
    return f"{len(ids)} item{'s' if len(ids) != 1 else ''} ({head}{more})"


def _also(missing: list[str]) -> str:
    return f"; {len(missing)} more not live" if missing else ""
