"""``stats --check``, ``stats --format prometheus`` and ``stats --watch`` (in :mod:`.watch`).

For operators: alert from cron or a Nagios-style agent (``--check``: one line per breach,
exit 5), feed node_exporter's textfile collector (``--format prometheus``), or watch the
queues live. A queue that cannot be read is an error row (watch) or ``rq_cli_up 0``
(prometheus) rather than the end of the run; ``--check`` exits 69 then (the state is unknown).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import RqError, ThresholdBreached, UsageError
from ..metrics import Sample, Thresholds, breaches, prometheus_text
from ..render import Column, Output

if TYPE_CHECKING:
    from ..core.reports import Stats
    from .common import State
    from .inspect import Target

BREACH_COLUMNS = [Column("queue"), Column("measure"), Column("value", kind="number"),
                  Column("limit", kind="number")]


def check_modes(*, watch: bool, check: bool, prometheus: bool, limits: Thresholds) -> None:
    """Refuse monitoring options that do not go together (exit 2)."""
    if sum((watch, check, prometheus)) > 1:
        raise UsageError("--watch, --check and --format prometheus go one at a time")
    if limits.any() and not check:
        raise UsageError("--max-pending, --max-age, --max-dead and --max-abandoned go with "
                         "--check")


def run(st: State, out: Output, targets: list[Target], *, check: bool, limits: Thresholds,
        prometheus: bool) -> None:
    """``stats --check`` or ``stats --format prometheus``."""
    if prometheus:
        samples = []
        for target in targets:
            got = read_stats(st, target)
            if isinstance(got, str):
                out.message(f"rq-cli: {target.name}: {got}")
            samples.append(Sample(target.name, target.queue.prefix,
                                  None if isinstance(got, str) else got))
        out.write(prometheus_text(samples))
    elif check:
        run_check(st, out, targets, limits)


def run_check(st: State, out: Output, targets: list[Target], flags: Thresholds) -> None:
    """Print one row per breach (queue, measure, value, limit); raise ThresholdBreached (5)."""
    rows: list[dict[str, Any]] = []
    checked = False
    for target in targets:
        configured = {} if st.raw_prefix else st.config.thresholds(target.name)
        limits = Thresholds.from_config(configured).merged(flags)
        if not limits.any():
            continue
        checked = True
        rows += [{"queue": target.name, "measure": b.measure, "value": b.value,
                  "limit": b.limit} for b in breaches(target.queue.stats(), limits)]
    if not checked:
        raise UsageError("stats --check has no thresholds: give --max-pending, --max-age, "
                         "--max-dead or --max-abandoned, or set max_pending (...) in the "
                         "config")
    if rows:
        out.rows(rows, BREACH_COLUMNS)
        shown = "; ".join(f"{r['queue']} {r['measure']} {_num(r['value'])} > {_num(r['limit'])}"
                          for r in rows)
        raise ThresholdBreached(f"{len(rows)} threshold{'s' if len(rows) > 1 else ''} "
                                f"breached: {shown}")


def _num(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def read_stats(st: State, target: Target) -> Stats | str:
    """The queue's stats, or the one-line reason they could not be read (URLs masked)."""
    try:
        return target.queue.stats()
    except Exception as exc:  # a server gone, a key of the wrong type: shown, not fatal
        err: BaseException | None = exc
        if not isinstance(exc, RqError):
            from ..connect import translate_error

            err = translate_error(exc, target.url)
        if err is None:
            raise  # not the server's doing: a bug
        from .root import scrub

        return " ".join(scrub(str(err), st).split())

