"""``rq-cli work``: run a shell command per item (rq_cli/worker/).

``work QUEUE... [OPTIONS] -- COMMAND [ARGS...]``: the words after ``--`` are the command.
Click drops the ``--`` while parsing, so ``WorkCommand.parse_args`` (Click's documented
per-command hook, reached through Typer's ``cls=``) splits the arguments there first.
"""

import os
import sys
from collections.abc import Callable
from enum import Enum
from typing import Annotated, Any

import typer

from ..errors import ServerError, UsageError
from ..worker import DEAD_EXIT, Worker, WorkerOptions
from ..worker.env import child_environ, masked_title, set_process_title
from ..worker.streams import log_line
from .common import JsonOpt, LeaseOpt, Order, QueuesArg, state
from .helptext import RqCommand

_COMMAND_KEY = "rq_cli_work_command"


class ResultFrom(str, Enum):
    """Where ``work --result`` takes an item's result from."""

    stdout = "stdout"


class WorkCommand(RqCommand):
    """Takes the words after ``--`` as the command to run, before Click parses the rest."""

    usage_tail = ("--", "COMMAND", "[ARGS]...")

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if "--" in args:
            at = args.index("--")
            ctx.meta[_COMMAND_KEY] = args[at + 1:]
            args = args[:at]
        return super().parse_args(ctx, args)


def work(
    ctx: typer.Context,
    queues: QueuesArg,
    concurrency: Annotated[int, typer.Option(
        "--concurrency", "-c", metavar="N", min=1, max=1000,
        help="Run up to N commands at once.")] = 1,
    timeout: Annotated[float | None, typer.Option(
        "--timeout", min=0.001, metavar="SECONDS", show_default=False,
        help="Stop a command that runs longer (SIGTERM, then SIGKILL after --grace) and fail "
             "its item with the error 'timeout'.")] = None,
    grace: Annotated[float, typer.Option(
        "--grace", min=0.0, metavar="SECONDS",
        help="Seconds between SIGTERM and SIGKILL when a command is stopped.")] = 5.0,
    lease_seconds: LeaseOpt = None,
    heartbeat: Annotated[float | None, typer.Option(
        "--heartbeat", min=0.01, metavar="SECONDS", show_default=False,
        help="Seconds between lease extensions (default: a third of the lease).")] = None,
    max_items: Annotated[int | None, typer.Option(
        "--max-items", metavar="N", min=1, show_default=False,
        help="Exit once N items have been taken and settled.")] = None,
    idle_exit: Annotated[float | None, typer.Option(
        "--idle-exit", min=0.0, metavar="SECONDS", show_default=False,
        help="Exit after this long with nothing to do.")] = None,
    order: Annotated[Order, typer.Option(
        "--order", help="With several queues: strict (the first non-empty in the order "
                        "given) or fair (a random order each time).")] = Order.strict,
    name: Annotated[str | None, typer.Option(
        "--name", metavar="NAME", show_default=False,
        help="A stable worker name: on start, take back the items this name's previous run "
             "(on this host) still held, and run them again at once. A name held by a live "
             "worker is refused (exit 75).")] = None,
    wait_for_name: Annotated[bool, typer.Option(
        "--wait-for-name",
        help="With --name: if a live worker holds the name, wait until it exits instead of "
             "refusing.")] = False,
    max_outage: Annotated[float | None, typer.Option(
        "--max-outage", min=0.0, metavar="SECONDS", show_default=False,
        help="Ride out a server outage this long at most (default: forever), then let "
             "running commands finish and exit 69.")] = None,
    pass_secrets: Annotated[bool, typer.Option(
        "--pass-secrets",
        help="Give commands the server's password: RQ_CLI_URL and REDIS_URL as they are, "
             "the password_env variables, and any variable holding it (default: without "
             "them, and masked in other values).")] = False,
    keep_running: Annotated[bool, typer.Option(
        "--keep-running-on-lost-lease",
        help="Let a command go on when its lease is lost (default: stop it).")] = False,
    result: Annotated[ResultFrom | None, typer.Option(
        "--result", metavar="stdout",
        help="Keep each command's standard output (at most 64 KiB; a longer one is cut, "
             "and its log line says so) as its item's result, for a batch item: rq-cli "
             "results prints it.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Run COMMAND for each item: data on stdin, exit 0 completes, 100 dead-letters.

    Example: rq-cli work emails --concurrency 4 --timeout 60 -- ./send-email.sh
    """
    command = ctx.meta.get(_COMMAND_KEY)
    if not command:
        raise UsageError("give the command to run after '--': rq-cli work QUEUE -- COMMAND "
                         "[ARGS...]")
    if name is not None and (not name or ":" in name or "\0" in name):
        raise UsageError("--name must be non-empty and contain no ':'")
    if wait_for_name and name is None:
        raise UsageError("--wait-for-name needs --name")
    set_process_title(masked_title(sys.argv))  # before anything else: ps shows no password
    st = state(ctx)
    wqs = st.queues(queues)
    if name is not None:
        from ..core.contract.util import make_session

        session = make_session(name)
        for wq in wqs:
            wq.session = session
    else:
        for wq in wqs[1:]:
            wq.session = wqs[0].session
    json_log = as_json or st.as_json or not st.terminal.stderr_isatty()

    def log(entry: dict[str, Any]) -> None:
        print(log_line(entry, json_log), file=sys.stderr, flush=True)

    from ..connection.connect import url_password

    secrets = [*st.secrets, *(url_password(u) or "" for u in st.urls_used)]
    env = child_environ(os.environ, secrets, secret_vars(st), pass_secrets)
    opts = WorkerOptions(concurrency=concurrency, timeout=timeout, grace=grace,
                         lease_seconds=lease_seconds, max_items=max_items,
                         idle_exit=idle_exit, order=order.value,
                         keep_running_on_lost_lease=keep_running, heartbeat=heartbeat,
                         max_outage=max_outage, env=env, stderr_as_log=json_log,
                         result=None if result is None else result.value)
    worker = Worker(wqs, command, opts, log, describe=describe_error(st.urls_used))
    host = os.uname().nodename
    reclaim = lock = None
    if name is not None:
        from ..worker.names import dead_session_of, hold_name

        lock = hold_name(name, host, wqs, wait_for_name, log)
        reclaim = dead_session_of(name, host)
    worker.start_guard()
    worker.install_signals()
    try:
        stats = worker.run(reclaim=reclaim)
        worker.stop_guard()  # a normal exit: nothing for the guard to clean up
    finally:
        worker.stop_all()  # (an error: no command outlives the worker; the guard kills
        worker.close()  # those that ignore SIGTERM after --grace)
        if lock is not None:
            lock.close()
    log({"event": "exit", "completed": stats.completed, "failed": stats.failed,
         "dead": stats.dead, "returned": stats.returned, "lost": stats.lost})
    if worker.gave_up:
        raise ServerError(worker.gave_up)


def secret_vars(st: Any) -> list[str]:
    """The environment variables the config names as holding passwords (password_env)."""
    cfg = st.config
    names = [cfg.password_env] + [q.get("password_env") for q in cfg.queues.values()]
    return [n for n in names if n]


def describe_error(urls: list[str]) -> Callable[[BaseException], str]:
    """One line for a server error, with the URLs' passwords masked (the worker's log)."""
    from ..connection.connect import mask_urls_in, translate_error

    def describe(err: BaseException) -> str:
        for url in urls:
            translated = translate_error(err, url)
            if translated is not None:
                return str(translated)
        return mask_urls_in(f"{type(err).__name__}: {err}")
    return describe


WorkCommand.__doc__ = f"{WorkCommand.__doc__} (exit code {DEAD_EXIT} dead-letters)"
work.command_class = WorkCommand  # type: ignore[attr-defined]
