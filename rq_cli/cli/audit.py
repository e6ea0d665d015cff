"""``rq-cli audit QUEUE``: a queue's audit trail (rq_cli.core.operations.audit), and the trail each
CLI command runs in (:func:`audit_trail`: its repairs are recorded with its command line)."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Annotated

import typer

from ..core.contract.limits import AUDIT_KEPT
from ..output.render import Column
from .common import JsonOpt, QueueArg, state

AUDIT_COLUMNS = [
    Column("at", "when", kind="time"), Column("action", drop=0), Column("count", kind="number"),
    Column("command", kind="words", drop=0), Column("user", drop=2), Column("host", drop=3),
    Column("token", drop=4, optional=True), Column("via", drop=2),
    Column("failed", drop=1, optional=True),
]


@contextmanager
def audit_trail(args: Sequence[str] | None) -> Iterator[None]:
    """Run a command in an audit trail: the repairs it makes (core calls that note them)
    are recorded in the trail of the first queue it opens, as ``rq-cli`` and ``args``
    (default: this process's), URL passwords masked, from this host and user."""
    from ..core.operations.audit import local_by, trail
    from ..output.render import message

    def command() -> str:
        import shlex

        from ..connection.urls import mask_urls_in

        words = list(sys.argv[1:] if args is None else args)
        return shlex.join(["rq-cli", *(mask_urls_in(w) for w in words)])

    with trail(None, command, local_by, warn=lambda m: message(f"rq-cli: warning: {m}")):
        yield


def audit(
    ctx: typer.Context,
    queue: QueueArg,
    limit: Annotated[int, typer.Option(
        "--limit", "-n", metavar="N", min=1, max=AUDIT_KEPT,
        help=f"The newest N entries (at most the {AUDIT_KEPT} kept).")] = 100,
    as_json: JsonOpt = False,
) -> None:
    """Print the repairs made to a queue from the CLI and the consoles (requeue, purge,
    cancel, pause, resume, reshard, limits), newest first: when, what (the command line it
    equals), how many, and from where (host, user, token label, cli/web/dash).

    Example: rq-cli audit emails --limit 20
    """
    from ..core.operations.audit import read_audit

    st = state(ctx)
    out = st.output(as_json)
    rows = [{"queue": queue, **e} for e in read_audit(st.queue(queue), limit)]
    if not rows and not out.json:
        out.message(f"rq-cli: no repairs recorded for {queue} (the audit trail keeps "
                    "requeue, purge, cancel, pause, resume, reshard and limits)")
        return
    out.rows(rows, AUDIT_COLUMNS)
