"""``stats --check``, ``stats --format prometheus`` and ``stats --watch`` (in :mod:`.watch`).

For operators: alert from cron or a Nagios-style agent (``--check``: one line per breach,
exit 5), feed node_exporter's textfile collector (``--format prometheus``), or watch the
queues live. A queue that cannot be read is an error row (watch) or ``rq_cli_up 0`` and
``rq_cli_scrape_error 1`` (prometheus, exit 0 so that cron replaces the file) rather than the
end of the run; ``--check`` prints it as a row and exits 6 (the state is unknown), also when
the server's queues could not even be listed. A queue with no key and no counter on its
server (:func:`absent`) is no green check either: ``--check`` exits 6 for it, Prometheus
says ``rq_cli_queue_exists 0``, both with a line on stderr.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import CheckUnknown, ThresholdBreached, UsageError
from ..ops.polling import read_stats
from ..output.metrics import Sample, Thresholds, breaches, prometheus_text
from ..output.render import Column, Output

if TYPE_CHECKING:
    from ..ops.targets import Target
    from .common import State

BREACH_COLUMNS = [Column("queue"), Column("measure"), Column("value", kind="number"),
                  Column("limit", kind="number"), Column("url", optional=True),
                  Column("error", optional=True)]


def check_modes(*, watch: bool, check: bool, prometheus: bool, limits: Thresholds) -> None:
    """Refuse monitoring options that do not go together (exit 2)."""
    if sum((watch, check, prometheus)) > 1:
        raise UsageError("--watch, --check and --format prometheus go one at a time")
    if limits.any() and not check:
        raise UsageError("--max-pending, --max-age, --max-dead and --max-abandoned go with "
                         "--check")


def run(st: State, out: Output, targets: list[Target], *, check: bool, limits: Thresholds,
        prometheus: bool, unlisted: list[dict[str, Any]]) -> None:
    """``stats --check`` or ``stats --format prometheus``. ``unlisted``: the servers whose
    queues could not be listed (rows with ``url``, masked, and ``error``)."""
    if prometheus:
        run_prometheus(st, out, targets, unlisted)
    elif check:
        run_check(st, out, targets, limits, unlisted)


def absent(name: str, url: str, st: State | None = None, wq: Any = None) -> str:
    """Why a queue that has no key and no counter on its server cannot be vouched for (with
    ``st`` and ``wq``: a sharded queue's base prefix read as a plain queue says so)."""
    from ..connection.connect import mask_url
    from .shardnote import sharded_note

    note = sharded_note(st, name, wq) if st is not None and wq is not None else None
    if note is not None:
        return note

    return (f"queue {name} has no keys and no counters on {mask_url(url)}: it has never been "
            "used there (a wrong URL, database or prefix, or a new, empty server?)")


def run_prometheus(st: State, out: Output, targets: list[Target],
                   unlisted: list[dict[str, Any]]) -> None:
    """Every queue's samples; an outage is ``rq_cli_up 0`` and ``rq_cli_scrape_error 1``
    (never an empty file, never an exit code that keeps cron from replacing the file)."""
    from ..connection.connect import mask_url

    samples = []
    for target in targets:
        got = read_stats(st, target)
        if isinstance(got, str):
            out.message(f"rq-cli: {target.name}: {got}")
        elif not got.exists:
            out.message(f"rq-cli: {absent(target.name, target.url, st, target.queue)}")
        samples.append(Sample(target.name, target.queue.prefix,
                              None if isinstance(got, str) else got, mask_url(target.url)))
        if hasattr(target.queue, "shard_stats"):  # a series per shard: a shard that is down
            try:                                 # is rq_cli_up 0 beside those that answer
                shards = target.queue.shard_stats()
            except Exception as exc:  # (its record unreadable: the queue's own line says why)
                if not isinstance(got, str):
                    raise
                shards = []
                del exc
            samples += [Sample(target.name, target.queue.prefix, shard, mask_url(target.url),
                               prefix) for prefix, _, shard, _ in shards]
    for row in unlisted:
        out.message(f"rq-cli: stats: {row['error']}")
        samples.append(Sample("", "", None, row["url"]))
    out.write(prometheus_text(samples))


def run_check(st: State, out: Output, targets: list[Target], flags: Thresholds,
              unlisted: list[dict[str, Any]]) -> None:
    """Print one row per breach (queue, measure, value, limit) and one per queue or server
    that could not be read (queue, error); raise CheckUnknown (6) if any could not be read,
    else ThresholdBreached (5) if any breached."""
    rows: list[dict[str, Any]] = []
    unknown: list[dict[str, Any]] = [{"queue": None, "url": r["url"], "error": r["error"]}
                                     for r in unlisted]
    checked = flags.any() or (bool(unlisted) and bool(st.config.thresholds()))
    for target in targets:
        configured = {} if st.raw_prefix else st.config.thresholds(target.name)
        limits = Thresholds.from_config(configured).merged(flags)
        if not limits.any():
            continue
        checked = True
        got = read_stats(st, target)
        if isinstance(got, str):
            unknown.append({"queue": target.name, "error": got})
            continue
        if not got.exists:
            unknown.append({"queue": target.name,
                            "error": absent(target.name, target.url, st, target.queue)})
            continue
        rows += [{"queue": target.name, "measure": b.measure, "value": b.value,
                  "limit": b.limit} for b in breaches(got, limits)]
    if not checked:
        raise UsageError("stats --check has no thresholds: give --max-pending, --max-age, "
                         "--max-dead or --max-abandoned, or set max_pending (...) in the "
                         "config")
    if rows or unknown:
        out.rows(rows + unknown, BREACH_COLUMNS)
    shown = "; ".join(f"{r['queue']} {r['measure']} {number(r['value'])} > "
                      f"{number(r['limit'])}" for r in rows)
    breached = f"{len(rows)} threshold{'s' if len(rows) != 1 else ''} breached"
    if unknown:
        raise CheckUnknown(f"{len(unknown)} of {len(targets) + len(unlisted)} could not be "
                           f"checked (the state is unknown): {unknown[0]['error']}"
                           + (f"; {breached}: {shown}" if rows else ""))
    if rows:
        raise ThresholdBreached(f"{breached}: {shown}")


def number(value: float) -> str:
    """A value or limit as the table and JSON show it (1003.142 everywhere, not 1003.14)."""
    return str(value)

