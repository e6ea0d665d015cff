"""A queue's Stats counts, declared once (:data:`COUNTS`), with the running counters'
meanings (:data:`RUNNING`). No Redis, no Typer, no rich.

A count is a value ``stats`` reads for a queue in one call: the items in a state, a part of
them, an age, a flag. From its one :class:`Count` line follow:

- the ``stats`` script's reply fields (specs.py: :func:`reply_fields`, in this order, after
  its four fixed fields: stats.lua replies with them in this order);
- :class:`~rq_cli.core.reports.Stats`' attributes (tests/core/test_counts.py ties them),
  read by reads.py (:func:`read`) and summed over a sharded queue's shards
  (shardstats.py, :func:`combined`);
- the JSON lines of ``stats`` (and ``--watch``, and each shard's row: output/shapes.py) and
  the properties of stats.schema.json (shapes.py ``schema`` adds them), and so the manual's
  field list;
- the ``stats`` table's columns (cli/inspect.py), the ``--watch`` dashboard's and the
  console's overview columns (cli/watch.py, dash/app.py: :data:`WATCHED`);
- the ``--sort`` keys of ``stats``, ``--watch`` and the console (:data:`SORTS`), and the
  thresholds of ``stats --check`` (``--max-<key>``, config ``max_<key>``: :data:`THRESHOLDS`);
- the Prometheus gauges of ``stats --format prometheus`` (output/metrics.py): the states'
  ``rq_cli_items{state=...}``, the others' own names.

A running counter (a field of ``P:counters``) is a word of codes.py (:class:`Counter`): its
meaning (the Prometheus help of ``rq_cli_<name>_total``) and whether ``--watch`` shows its
rate are said here, in :data:`RUNNING`.

**Adding a count** the stats script reads: its line here (with ``reply``), the attribute on
``Stats`` (reports.py) and its value in stats.lua's reply (in declaration order), its test
and its CHANGELOG entry. A count worked out from others (``reply`` None) is computed in
reads.py instead of stats.lua. **Adding a counter**: its word in codes.py (``Counter``), its
line in :data:`RUNNING`, and the script that counts it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from ..codes import Counter

#: What a count is (its kind): the items in one state (codes.ItemState: exported as
#: ``rq_cli_items{state=...}``), some of a state's items, how many of something else (an
#: integer), an age in seconds (a float; null when unknown), a yes/no.
STATE = "state"
PART = "part"
NUMBER = "number"
AGE = "age"
FLAG = "flag"
KINDS = (STATE, PART, NUMBER, AGE, FLAG)


class Count(NamedTuple):
    """One count of :class:`~rq_cli.core.reports.Stats`."""

    name: str  #: the Stats attribute, the JSON field of the stats lines, the column's key
    kind: str  #: one of :data:`KINDS`
    doc: str  #: its meaning, one sentence (the schemas' description)
    #: the stats script's reply field it is read from; None: reads.py works it out from others
    reply: str | None
    #: the ``stats`` table's column header (None: its name), and how soon a narrow terminal
    #: drops it (0: never)
    heading: str | None = None
    drop: int = 1
    #: the header of its column in ``stats --watch`` and the console's overview (None: not
    #: shown there), and how soon a narrow terminal drops it
    watch: str | None = None
    watch_drop: int = 1
    #: its short name as a ``--sort`` key and a ``stats --check`` measure (None: its name)
    key: str | None = None
    sort: bool = False  #: a ``--sort`` key: the largest first
    #: what a ``--max-<key>`` threshold of ``stats --check`` limits (None: not a measure)
    threshold: str | None = None
    #: its Prometheus gauge's name and help (None: none of its own; a state is in rq_cli_items)
    metric: tuple[str, str] | None = None
    in_shards: bool = True  #: in each shard's row of a sharded queue's stats
    #: its ``stats`` table column only where a row has it (80 columns fit the rest unsplit)
    sparse: bool = False

    @property
    def short(self) -> str:
        """Its name as a ``--sort`` key and a ``--check`` measure."""
        return self.key or self.name


COUNTS: tuple[Count, ...] = (
    Count("pending", STATE, "Items waiting in line (every tenant).", "pending", drop=0,
          watch="pending", watch_drop=0, sort=True, threshold="items waiting in line"),
    Count("processing", STATE, "Items leased (live or abandoned).", "processing", drop=3),
    Count("leased", PART, "Processing items whose lease is held.", "leased", watch="leased"),
    Count("abandoned", PART, "Processing items whose lease ran out.", None,
          watch="aband.", watch_drop=0, sort=True,
          threshold="items whose lease ran out, not yet put back in line",
          metric=("rq_cli_abandoned_leases",
                  "Items in processing whose lease ran out (the worker died or stalled).")),
    Count("delayed", STATE, "Items waiting for a retry or a delay.", "delayed",
          watch="delayed", watch_drop=2),
    Count("due", PART, "Delayed items already due.", "due", drop=4),
    Count("dead", STATE, "Dead-lettered items.", "dead", drop=0, watch="dead", watch_drop=0,
          sort=True, threshold="dead-lettered items"),
    Count("oldest_pending_age_s", AGE, "Age of the oldest pending item, seconds; null when "
          "unknown (none, or pushed by a peer).", "oldest_ms", heading="oldest",
          watch="oldest", key="age", sort=True,
          threshold="age of the oldest pending item, seconds",
          metric=("rq_cli_oldest_pending_age_seconds",
                  "Age of the oldest pending item (0 when none is pending; absent when "
                  "unknown).")),
    Count("paused", FLAG, "Whether the queue is paused.", "paused", drop=2,
          metric=("rq_cli_paused", "1 while the queue is paused.")),
    Count("limits", FLAG, "Whether the queue has fleet-wide limits (rq-cli limit shows them).",
          "limits", drop=3, sparse=True,
          metric=("rq_cli_limits", "1 while the queue has fleet-wide limits (a rate or an "
                                   "in-flight cap).")),
    Count("tenants", NUMBER, "Fair queues: tenants with work (the default tenant not "
          "counted).", "tenants", drop=2, in_shards=False, sparse=True),
)

BY_NAME: dict[str, Count] = {c.name: c for c in COUNTS}
#: the counts that are numbers of items or things (summed over shards)
TALLIES = tuple(c.name for c in COUNTS if c.kind in (STATE, PART, NUMBER))
#: the counts ``stats --watch`` and the console's overview show, in this order
WATCHED = tuple(c for c in COUNTS if c.watch is not None)
#: the ``--sort`` keys: as given, by name, each sort count's (the largest first), errors first
SORTS: tuple[str, ...] = ("given", "name", *(c.short for c in COUNTS if c.sort), "errors")
#: the measures of ``stats --check``: key -> (the count it reads, what it limits)
THRESHOLDS: dict[str, tuple[Count, str]] = {
    c.short: (c, c.threshold) for c in COUNTS if c.threshold is not None}


class Running(NamedTuple):
    """One running counter (a field of ``P:counters``)."""

    counter: Counter
    help: str  #: its meaning (the Prometheus help of ``rq_cli_<name>_total``)
    #: ``stats --watch`` shows its rate per second under ``<rate>/s`` (None: not shown), and
    #: how soon a narrow terminal drops that column
    rate: str | None = None
    rate_drop: int = 3


RUNNING: tuple[Running, ...] = (
    Running(Counter.PUSHED, "Items added by push.", rate="push"),
    Running(Counter.DUPLICATES, "Pushes refused because the id was live or dead."),
    Running(Counter.LEASED, "Leases granted."),
    Running(Counter.COMPLETED, "Items completed.", rate="done"),
    Running(Counter.FAILED, "Failures reported (fail, or a worker's command failing).",
            rate="fail", rate_drop=4),
    Running(Counter.RETRIED, "Failed items put back to be retried."),
    Running(Counter.DEAD, "Items dead-lettered.", rate="dead", rate_drop=4),
    Running(Counter.EXPIRED, "Items dead-lettered because they expired before being leased."),
    Running(Counter.REQUEUED, "Dead items put back in line by requeue-dead."),
    Running(Counter.CLEANED, "Abandoned or stray items put back in line by clean."),
    Running(Counter.LIMITED, "Leases the queue's limits held back (its rate spent, or its "
                             "in-flight cap reached): each leased nothing."),
)

#: the counters ``stats --watch`` shows as rates per second
RATE_COUNTERS: tuple[str, ...] = tuple(r.counter.value for r in RUNNING if r.rate)


def reply_fields() -> tuple[str, ...]:
    """The stats script's reply fields of the counts it reads, in declaration order."""
    return tuple(c.reply for c in COUNTS if c.reply is not None)


def read(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The counts read from the stats reply's ``fields`` (decoded by name), by name: each
    as its kind holds it (a number, a flag); an age is left as stored (reads.py works it
    out, with the counts that have no ``reply``)."""
    out: dict[str, Any] = {}
    for c in COUNTS:
        if c.reply is None or c.kind == AGE:
            continue
        value = int(fields[c.reply])
        out[c.name] = bool(value) if c.kind == FLAG else value
    return out


def combined(parts: Iterable[Any]) -> dict[str, Any]:
    """The counts of a whole queue from its shards' Stats: tallies summed, the largest
    age (None when no shard knows one), a flag when any shard's is set."""
    parts = list(parts)
    out: dict[str, Any] = {}
    for c in COUNTS:
        values = [getattr(s, c.name) for s in parts]
        if c.kind == AGE:
            known = [v for v in values if v is not None]
            out[c.name] = max(known) if known else None
        elif c.kind == FLAG:
            out[c.name] = any(values)
        else:
            out[c.name] = sum(values)
    return out


def values(stats: Any, shard: bool = False) -> dict[str, Any]:
    """The counts of ``stats`` (a Stats) by name, for its JSON line; ``shard``: those of a
    shard's row."""
    return {c.name: getattr(stats, c.name) for c in COUNTS if c.in_shards or not shard}


def column_kind(count: Count) -> str:
    """The kind of its table column (output/render.py ``Column``)."""
    return {AGE: "age", FLAG: "text"}.get(count.kind, "number")


def schema_properties(shard: bool = False) -> tuple[dict[str, Any], list[str]]:
    """The JSON Schema properties of the counts (``shard``: of a shard's row), and those
    always present: every count in a stats line."""
    props: dict[str, Any] = {}
    for c in COUNTS:
        if shard and not c.in_shards:
            continue
        prop: dict[str, Any]
        if c.kind == AGE:
            prop = {"type": ["number", "null"], "minimum": 0}
        elif c.kind == FLAG:
            prop = {"type": "boolean"}
        else:
            prop = {"type": "integer", "minimum": 0}
        props[c.name] = {**prop, "description": c.doc}
    return props, [] if shard else list(props)
