"""The JSON shape of each result type: one function per type, used by every command that
prints it, so that two commands (``stats`` and ``stats --watch``, ``complete`` and
``extend``) cannot drift apart.

Each shape is documented by a JSON Schema file in ``rq_cli/schemas/`` (one per command,
``<command>.schema.json``, listed in :data:`SCHEMAS`); tests/cli/test_schemas.py runs every
command against a real server and validates each line it prints. ``bytes`` values are
payload data, written by :func:`rq_cli.output.jsonlines.json_line` (``data``, ``data_b64``,
``raw``).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import TYPE_CHECKING, Any

from ..core.codes import COUNTERS
from ..core.contract import counts, fields

if TYPE_CHECKING:
    from ..core.errgroups import ErrorGroup
    from ..core.filtering import FilterReport
    from ..core.history import Bucket
    from ..core.reports import CleanReport, Holder, PeekedItem, PurgeReport, RequeueReport, Stats
    from ..core.types import ItemOutcome, LeasedItem

#: Every command that prints JSON on stdout (``work``: on stderr, its log), by its name as
#: typed (``config show``), and the schema file that documents its lines.
SCHEMAS: dict[str, str] = {
    "push": "push", "lease": "lease", "complete": "outcome", "fail": "outcome",
    "extend": "outcome", "cancel": "outcome", "stats": "stats", "peek": "peek",
    "queues": "queues", "doctor": "doctor", "holders": "holders", "clean": "clean",
    "requeue-dead": "requeue-dead", "purge": "purge", "dedup": "dedup", "pause": "paused",
    "resume": "paused", "reshard": "reshard", "work": "work-log", "config path": "config-path",
    "config show": "config-show", "server status": "server-status",
    "server stop": "server-stop", "errors": "errors", "audit": "audit", "batch": "batch",
    "wait": "batch", "results": "results", "limit": "limit",
}


#: The schemas whose lines carry items, and the reply whose per-item fields they carry
#: (core/contract/fields.py): their files leave those fields out, :func:`schema` adds them.
ITEM_SCHEMAS = {"lease": fields.LEASE, "peek": fields.PEEK}


def schema(name: str) -> dict[str, Any]:
    """The JSON Schema ``rq_cli/schemas/<name>.schema.json`` (shipped in the wheel), with
    the per-item fields of core/contract/fields.py where its lines carry items
    (:data:`ITEM_SCHEMAS`), and ``stats``' counts and counters (core/contract/counts.py,
    codes.py)."""
    text = resources.files("rq_cli").joinpath("schemas").joinpath(f"{name}.schema.json")
    loaded: dict[str, Any] = json.loads(text.read_text(encoding="utf-8"))
    if name in ITEM_SCHEMAS:
        props, always = fields.schema_properties(ITEM_SCHEMAS[name])
        loaded["properties"].update(props)
        loaded["required"] = [*loaded["required"], *always]
    if name == "stats":
        _stats_schema(loaded["$defs"])
    return loaded


def _stats_schema(defs: dict[str, Any]) -> None:
    """The counts (after ``prefix``, or a shard's ``live``), every counter, the rates."""
    def insert(obj: dict[str, Any], after: str, shard: bool) -> None:
        props, always = counts.schema_properties(shard)
        keys = list(obj["properties"])
        at = keys.index(after) + 1
        obj["properties"] = {**{k: obj["properties"][k] for k in keys[:at]}, **props,
                             **{k: obj["properties"][k] for k in keys[at:]}}
        obj["required"] = [*obj["required"], *always]

    def numbers(obj: dict[str, Any], names: tuple[str, ...], kind: str) -> None:
        obj["properties"] = {n: {"type": kind, "minimum": 0} for n in names}
        obj["required"] = list(names)

    for name in ("stats", "watch"):
        insert(defs[name], "prefix", False)
        numbers(defs[name]["properties"]["counters"], COUNTERS, "integer")
    for name in ("stats", "error"):
        insert(defs[name]["properties"]["shards"]["items"], "live", True)
    numbers(defs["watch"]["properties"]["rates"]["anyOf"][0], counts.RATE_COUNTERS, "number")


def stats_row(name: str, s: Stats) -> dict[str, Any]:
    """``stats`` (and each queue of ``stats --watch``): the counts, every counter included."""
    return {"queue": name, "prefix": s.queue, **counts.values(s), "counters": dict(s.counters)}


def shard_rows(parts: list[tuple[str, bool, Stats | None, str | None]],
               ) -> list[dict[str, Any]]:
    """``stats`` of a sharded queue, its ``shards`` field: a row per shard (``live``: false
    while it drains), with its counts, or its ``error`` when its server cannot be read."""
    out: list[dict[str, Any]] = []
    for prefix, live, s, error in parts:
        row: dict[str, Any] = {"prefix": prefix, "live": live}
        if s is None:
            row["error"] = error
        else:
            row.update(counts.values(s, shard=True))
        out.append(row)
    return out


def tenant_rows(name: str, s: Stats) -> list[dict[str, Any]]:
    """``stats --by-tenant``: a row per tenant with pending items (null: the default)."""
    return [{"queue": name, "tenant": tenant or None, "pending": depth}
            for tenant, depth in (s.by_tenant or {}).items()]


def watch_row(name: str, prefix: str, at: float, got: Stats | str,
              rates: dict[str, float] | None) -> dict[str, Any]:
    """``stats --watch``: a ``stats`` row, with ``at`` (when read) and ``rates`` (per second
    since the previous read; null on the first), or ``queue``, ``prefix``, ``at``, ``error``."""
    if isinstance(got, str):
        return {"queue": name, "prefix": prefix, "at": at, "error": got}
    return {**stats_row(name, got), "at": at, "rates": rates}


def history_row(name: str, b: Bucket) -> dict[str, Any]:
    """``stats --history``: one line per bucket (its start, the time it covers, the deltas)."""
    return {"queue": name, "at": b.at, "seconds": b.seconds, **b.deltas}


def group_row(name: str, g: ErrorGroup) -> dict[str, Any]:
    """``errors``: one line per error group and state."""
    return {"queue": name, "key": g.key, "state": g.state, "count": g.count, "error": g.error,
            "pattern": g.pattern, "first_at": g.first_at, "last_at": g.last_at,
            "sample_id": g.sample_id}


def peek_row(item: PeekedItem) -> dict[str, Any]:
    """id, state, data, attempts and the per-item fields that are ``always`` there
    (core/contract/fields.py); the other fields when they are set."""
    row: dict[str, Any] = {"id": item.id, "state": item.state, "data": item.data,
                           "attempts": item.attempts, **fields.row(fields.PEEK, item, True)}
    for key in ("lease_session", "lease_expires_at", "due_at", "dead_at", "dead_reason"):
        value = getattr(item, key)
        if value is not None:
            row[key] = value
    row.update(fields.row(fields.PEEK, item, False))
    if item.abandoned:
        row["abandoned"] = True
    return row


def lease_row(name: str, item: LeasedItem, lease: bool = True) -> dict[str, Any]:
    """``lease``: the item, (unless ``--at-most-once``) its lease, and the per-item fields
    lease carries (core/contract/fields.py)."""
    row = {"queue": name, "id": item.id, "data": item.data, "attempt": item.attempt,
           **fields.row(fields.LEASE, item, True)}
    if lease:
        row["lease_expires_at"] = item.lease_expires_at
        row["session"] = item.session
    row.update(fields.row(fields.LEASE, item, False))
    return row


def outcome_row(name: str, o: ItemOutcome) -> dict[str, Any]:
    """``complete``, ``fail``, ``extend``, ``cancel``: what became of one id."""
    row: dict[str, Any] = {"queue": name, "id": o.id, "outcome": o.outcome}
    if o.retry_at is not None:
        row["retry_at"] = o.retry_at
    if o.lease_expires_at is not None:
        row["lease_expires_at"] = o.lease_expires_at
    return row


def holder_row(queue: str, h: Holder, with_ids: bool = False) -> dict[str, Any]:
    """``holders``: a session and what it holds; ``ids`` with ``--ids``."""
    row: dict[str, Any] = {
        "queue": queue, "session": h.session, "host": h.host, "pid": h.pid,
        "items": h.items, "live": h.live, "abandoned": h.abandoned,
        "oldest_id": h.oldest_id, "oldest_deadline": h.oldest_deadline,
        "nearest_deadline": h.nearest_deadline}
    if with_ids:
        row["ids"] = h.ids
    return row


def clean_row(name: str, r: CleanReport) -> dict[str, Any]:
    """``clean``: what it did (or, a dry run, would do) to one queue."""
    return {"queue": name, "recovered": r.recovered, "dropped": r.dropped, "dead": r.dead,
            "suspects": r.suspects, "promoted": r.promoted, "pruned": r.pruned,
            "scanned": r.scanned, "dry_run": r.dry_run}


def requeue_row(name: str, to: str, r: RequeueReport) -> dict[str, Any]:
    """``requeue-dead`` without a filter: the counts (not the ids)."""
    return {"queue": name, "to": to, "requeued": r.requeued, "skipped": r.skipped,
            "missing": r.missing, "dry_run": r.dry_run}


def purge_row(name: str, r: PurgeReport) -> dict[str, Any]:
    """``purge`` without a filter: the items per state, and in all."""
    return {"queue": name, "pending": r.pending, "processing": r.processing,
            "delayed": r.delayed, "dead": r.dead, "strays": r.strays, "total": r.total,
            "dry_run": r.dry_run}


def summary_row(report: FilterReport, verb: str, to: str | None = None) -> dict[str, Any]:
    """A filtered ``requeue-dead`` or ``purge`` (dry run, ``--summary``, a terminal): the
    counts, the verb's count under its name, a sample of the ids."""
    row: dict[str, Any] = {"queue": report.queue, "state": report.state,
                           "scanned": report.scanned, "matched": report.matched,
                           "not_json": report.not_json}
    if report.action == "requeue":
        row["skipped"] = report.skipped
    row.update({"changed": report.changed, "dry_run": report.dry_run,
                "sample": list(report.sample), verb: report.done})
    if to is not None:
        row["to"] = to
    return row


def moved_row(queue: str, state: str, verb: str, item_id: str,
              to: str | None) -> dict[str, Any]:
    """A filtered ``requeue-dead`` or ``purge``: one item moved."""
    row: dict[str, Any] = {"queue": queue, "id": item_id, "state": state, verb: True}
    if to is not None:
        row["to"] = to
    return row
