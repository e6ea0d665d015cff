"""Seeing and alerting over :class:`~rq_cli.core.reports.Stats`: thresholds, rates, Prometheus text.

- :func:`breaches`: the thresholds of ``stats --check`` (``--max-pending`` and the like, or
  the config's ``max_pending`` ...) that a queue's stats exceed.
- :func:`rates`: per-second rates of the counters between two reads (``stats --watch``).
- :func:`prometheus_text`: the Prometheus text exposition format (version 0.0.4) of
  ``stats --format prometheus``, for node_exporter's textfile collector.

Pure functions over plain values: no Redis, no Typer, no rich.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, NamedTuple

from ..core.codes import STATES as ITEM_STATES
from ..core.codes import Counter
from ..core.keys import COUNTER_FIELDS

if TYPE_CHECKING:
    from ..core.reports import Stats

# -- thresholds ----------------------------------------------------------------------------------
#: measure -> (the Stats field it reads, what it means): the names ``--max-<measure>`` and the
#: config's ``max_<measure>`` use
MEASURES: dict[str, tuple[str, str]] = {
    "pending": ("pending", "items waiting in line"),
    "age": ("oldest_pending_age_s", "age of the oldest pending item, seconds"),
    "dead": ("dead", "dead-lettered items"),
    "abandoned": ("abandoned", "items whose lease ran out, not yet put back in line"),
}


@dataclass(frozen=True)
class Thresholds:
    """Limits of ``stats --check``; None: not checked. A value above its limit is a breach."""

    pending: int | None = None
    age: float | None = None
    dead: int | None = None
    abandoned: int | None = None

    def merged(self, over: Thresholds) -> Thresholds:
        """These limits, with each limit ``over`` sets replacing ours."""
        return Thresholds(**{f.name: getattr(over, f.name) if getattr(over, f.name) is not None
                             else getattr(self, f.name) for f in fields(Thresholds)})

    @classmethod
    def from_config(cls, values: Mapping[str, Any]) -> Thresholds:
        """From config keys ``max_pending``, ``max_age``, ``max_dead``, ``max_abandoned``."""
        return cls(**{m: values[f"max_{m}"] for m in MEASURES if f"max_{m}" in values})

    def any(self) -> bool:
        return any(getattr(self, f.name) is not None for f in fields(Thresholds))


class Breach(NamedTuple):
    measure: str  # a key of MEASURES
    value: float
    limit: float


def breaches(stats: Stats, limits: Thresholds) -> list[Breach]:
    """The measures of ``stats`` above their limits, in MEASURES order."""
    found = []
    for measure, (attribute, _) in MEASURES.items():
        limit = getattr(limits, measure)
        value = getattr(stats, attribute)
        if limit is not None and value is not None and value > limit:
            found.append(Breach(measure, value, limit))
    return found


# -- rates ---------------------------------------------------------------------------------------
#: the counters ``stats --watch`` shows as rates per second
RATE_COUNTERS = (Counter.PUSHED.value, Counter.COMPLETED.value, Counter.FAILED.value,
                 Counter.DEAD.value)


def rates(before: Mapping[str, int], after: Mapping[str, int], seconds: float,
          names: Iterable[str] = RATE_COUNTERS) -> dict[str, float]:
    """Per-second increase of each counter in ``names`` over ``seconds``. A counter that went
    down (the queue was purged with ``--state all``, which resets them) counts from zero."""
    out = {}
    for name in names:
        old, new = before.get(name, 0), after.get(name, 0)
        delta = new - old if new >= old else new
        out[name] = delta / seconds if seconds > 0 else 0.0
    return out


# -- Prometheus ----------------------------------------------------------------------------------
class Sample(NamedTuple):
    """One queue for :func:`prometheus_text`: its name, prefix, stats (None: unreadable) and
    server (its URL, masked; "" if not known).

    A server whose queues could not even be listed (no queue named or configured, and the
    server is down) is a sample with the queue and prefix "" and no stats: its outage still
    shows as ``rq_cli_up 0``.
    """

    queue: str
    prefix: str
    stats: Stats | None
    server: str = ""
    #: a sharded queue's shard (its prefix): a ``shard`` label; "" for a whole queue
    shard: str = ""


#: name -> (type, help) of every metric, in the order printed
COUNTER_HELP = {
    "pushed": "Items added by push.",
    "duplicates": "Pushes refused because the id was live or dead.",
    "leased": "Leases granted.",
    "completed": "Items completed.",
    "failed": "Failures reported (fail, or a worker's command failing).",
    "retried": "Failed items put back to be retried.",
    "dead": "Items dead-lettered.",
    "expired": "Items dead-lettered because they expired before being leased.",
    "requeued": "Dead items put back in line by requeue-dead.",
    "cleaned": "Abandoned or stray items put back in line by clean.",
}
STATES = ITEM_STATES  # (codes.ItemState)


def metric_names() -> list[str]:
    """Every metric name :func:`prometheus_text` may print (docs/commands.md lists them)."""
    return ["rq_cli_up", "rq_cli_queue_exists", "rq_cli_scrape_error", "rq_cli_items",
            "rq_cli_abandoned_leases", "rq_cli_oldest_pending_age_seconds", "rq_cli_paused",
            *(f"rq_cli_{name}_total" for name in COUNTER_FIELDS)]


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    return repr(float(value))


def prometheus_text(samples: Sequence[Sample]) -> str:
    """The text exposition of ``samples``: each family's HELP, TYPE and samples together."""
    lines: list[str] = []

    def family(name: str, kind: str, text: str,
               rows: Iterable[tuple[Sample, str, float | None]]) -> None:
        lines.append(f"# HELP {name} {text}")
        lines.append(f"# TYPE {name} {kind}")
        for sample, extra, value in rows:
            if value is None:
                continue
            labels = f'queue="{_label(sample.queue)}",prefix="{_label(sample.prefix)}"'
            if sample.shard:
                labels += f',shard="{_label(sample.shard)}"'
            labels += extra
            lines.append(f"{name}{{{labels}}} {_number(value)}")

    read = [s for s in samples if s.stats is not None]
    # one "" per outage
    unique = {(s.queue, s.prefix, s.shard, s.stats is None): s for s in samples}
    family("rq_cli_up", "gauge", "1 if the queue's stats could be read, else 0 (queue=\"\": "
           "the queues of a server could not be listed).",
           ((s, "", 1 if s.stats is not None else 0) for s in unique.values()))
    family("rq_cli_queue_exists", "gauge", "1 if the queue has keys or counters on its "
           "server, else 0: never used there (a wrong URL, database or prefix, a new empty "
           "server), or it could not be read.",
           ((s, "", 1 if s.stats is not None and s.stats.exists else 0)
            for s in unique.values()))
    lines.extend(_scrape_errors(samples))
    family("rq_cli_items", "gauge", "Items in the queue, by state.",
           ((s, f',state="{state}"', getattr(s.stats, state)) for s in read for state in STATES))
    family("rq_cli_abandoned_leases", "gauge",
           "Items in processing whose lease ran out (the worker died or stalled).",
           ((s, "", s.stats.abandoned) for s in read if s.stats))
    family("rq_cli_oldest_pending_age_seconds", "gauge",
           "Age of the oldest pending item (0 when none is pending; absent when unknown).",
           ((s, "", _oldest_age(s.stats)) for s in read if s.stats))
    family("rq_cli_paused", "gauge", "1 while the queue is paused.",
           ((s, "", 1 if s.stats.paused else 0) for s in read if s.stats))
    for name in COUNTER_FIELDS:
        family(f"rq_cli_{name}_total", "counter", COUNTER_HELP[name],
               ((s, "", s.stats.counters.get(name, 0)) for s in read if s.stats))
    return "\n".join(lines) + "\n"


def _scrape_errors(samples: Sequence[Sample]) -> list[str]:
    """``rq_cli_scrape_error{server=...}``: 1 per server where anything failed in this run."""
    failed: dict[str, bool] = {}
    for s in samples:
        if s.server:
            failed[s.server] = failed.get(s.server, False) or s.stats is None
    return ["# HELP rq_cli_scrape_error 1 if a queue of this server, or the list of its "
            "queues, could not be read in this run, else 0.",
            "# TYPE rq_cli_scrape_error gauge",
            *(f'rq_cli_scrape_error{{server="{_label(server)}"}} {1 if bad else 0}'
              for server, bad in failed.items())]


def _oldest_age(stats: Stats) -> float | None:
    if stats.pending == 0:
        return 0.0
    return stats.oldest_pending_age_s
