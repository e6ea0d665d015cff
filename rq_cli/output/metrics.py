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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from ..core.codes import STATES as ITEM_STATES
from ..core.contract import counts
from ..core.contract.counts import THRESHOLDS
from ..core.contract.keys import COUNTER_FIELDS

if TYPE_CHECKING:
    from ..core.reports import Stats

# -- thresholds ----------------------------------------------------------------------------------
#: measure -> (the Stats field it reads, what it means): the names ``--max-<measure>`` and the
#: config's ``max_<measure>`` use (core/contract/counts.py: each count with a threshold)
MEASURES: dict[str, tuple[str, str]] = {
    key: (count.name, meaning) for key, (count, meaning) in THRESHOLDS.items()}


@dataclass(frozen=True)
class Thresholds:
    """Limits of ``stats --check``: measure (of :data:`MEASURES`) -> limit; a measure not
    there is not checked. A value above its limit is a breach."""

    limits: Mapping[str, float] = field(default_factory=dict)

    def merged(self, over: Thresholds) -> Thresholds:
        """These limits, with each limit ``over`` sets replacing ours."""
        return Thresholds({**self.limits, **over.limits})

    @classmethod
    def from_config(cls, values: Mapping[str, Any]) -> Thresholds:
        """From config keys (or options) ``max_<measure>`` (``max_pending``, ``max_age``
        ...); None: not set."""
        return cls({m: values[f"max_{m}"] for m in MEASURES
                    if values.get(f"max_{m}") is not None})

    def any(self) -> bool:
        return bool(self.limits)


class Breach(NamedTuple):
    measure: str  # a key of MEASURES
    value: float
    limit: float


def breaches(stats: Stats, limits: Thresholds) -> list[Breach]:
    """The measures of ``stats`` above their limits, in MEASURES order."""
    found = []
    for measure, (attribute, _) in MEASURES.items():
        limit = limits.limits.get(measure)
        value = getattr(stats, attribute)
        if limit is not None and value is not None and value > limit:
            found.append(Breach(measure, value, limit))
    return found


# -- rates ---------------------------------------------------------------------------------------
#: the counters ``stats --watch`` shows as rates per second (core/contract/counts.py)
RATE_COUNTERS = counts.RATE_COUNTERS


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


#: counter -> its meaning, the help of ``rq_cli_<counter>_total`` (core/contract/counts.py)
COUNTER_HELP = {r.counter.value: r.help for r in counts.RUNNING}
STATES = ITEM_STATES  # (codes.ItemState)
#: the counts with a gauge of their own (the states are in rq_cli_items)
GAUGES = tuple(c for c in counts.COUNTS if c.metric is not None)


def metric_names() -> list[str]:
    """Every metric name :func:`prometheus_text` may print (docs/commands.md lists them)."""
    return ["rq_cli_up", "rq_cli_queue_exists", "rq_cli_scrape_error", "rq_cli_items",
            *(c.metric[0] for c in GAUGES if c.metric),
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
    for count in GAUGES:
        if count.metric:
            family(count.metric[0], "gauge", count.metric[1],
                   ((s, "", _gauge(s.stats, count)) for s in read if s.stats))
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


def _gauge(stats: Stats, count: counts.Count) -> float | None:
    """A count's gauge: its value (a flag 1 or 0); an age 0 when nothing is pending."""
    if count.kind == counts.AGE and stats.pending == 0:
        return 0.0
    value: float | None = getattr(stats, count.name)
    return value
