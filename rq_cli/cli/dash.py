"""``rq-cli dash``: the terminal console (:mod:`rq_cli.dash`, Textual, the ``dash`` extra)."""

from __future__ import annotations

from typing import Annotated

import typer

from ..connection.urls import mask_url
from ..errors import ServerError, UsageError
from .common import OptQueuesArg, State, state
from .inspect import DiscoverOpt, stats_targets

INSTALL_HINT = "pip install 'rqcli[dash]'"


def dash(
    ctx: typer.Context,
    queues: OptQueuesArg = None,
    discover: DiscoverOpt = False,
    read_only: Annotated[bool, typer.Option(
        "--read-only", help="Hide every action: look, never touch (also read_only = true in "
                            "the config's [dash] table).")] = False,
    interval: Annotated[float, typer.Option(
        "--interval", min=0.5, max=3600, metavar="SECONDS",
        help="Seconds between refreshes.")] = 2.0,
) -> None:
    """A keyboard-driven console: every queue, its items page by page, and repairs.

    Overview of every queue (depths, oldest age, throughput and depth sparklines); enter
    opens a queue: tabs for pending, processing, delayed, dead, holders and the de-dup
    window, filters as in the CLI, and actions by key (requeue, purge, pause, cancel,
    extend, clean; on a holder, ask its worker to drain or stop), each confirmed with
    what it will do and its equivalent command line.
    ? lists the keys. Needs a terminal and the dash extra (pip install 'rqcli[dash]').

    Example: rq-cli dash emails thumbnails
    """
    st = state(ctx)
    if not (st.terminal.stdin_isatty() and st.terminal.stdout_isatty()):
        raise UsageError("rq-cli dash needs a terminal (for scripts: rq-cli stats, peek, "
                         "requeue-dead ...)")
    try:
        from ..dash.app import DashApp
    except ImportError as exc:
        raise ServerError(f"rq-cli dash needs Textual ({exc.name or exc} is not installed): "
                          f"{INSTALL_HINT}") from None
    targets = stats_targets(st, queues or [], discover)
    read_only = read_only or st.config.dash_read_only
    app = DashApp(st, targets, read_only=read_only, interval=interval,
                  cli_prefix=global_options(st))
    app.run()
    if app.return_code:  # a crash (Textual has put the terminal back and shown it): a bug
        raise typer.Exit(app.return_code)


def global_options(st: State) -> list[str]:
    """The global options the console's command lines need to reach the same queues (a
    password in ``--url`` masked)."""
    words: list[str] = []
    if st.url:
        words += ["--url", mask_url(st.url)]
    if st.config_path:
        words += ["--config", st.config_path]
    if st.no_config:
        words.append("--no-config")
    if st.raw_prefix:
        words.append("--prefix")
    return words
