"""The scripts' contract with Python: each script's named arguments and reply fields
(:data:`SPECS`), decoded by name (:class:`Reply`, :func:`row_type`). No Typer, no rich."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any, NamedTuple

from .counts import reply_fields
from .fields import LEASE, PEEK, names

#: ARGV[1..3] of every script: prefix, now (ms, "" = the server's clock), layout
HEAD = ("prefix", "now", "layout")


class Reply(NamedTuple):
    """A decoded script reply: its fixed fields by name, and its repeated groups, each a
    named tuple whose fields are the spec's ``rows`` names (``row.id``, ``row.data``)."""

    fields: dict[str, Any]
    rows: list[Any]


@cache
def row_type(script: str) -> type[tuple[Any, ...]]:
    """The named tuple of one repeated group of ``script``'s reply (made on first use:
    start-up time is a budget)."""
    from collections import namedtuple

    return namedtuple(f"{script}_row", SPECS[script].rows)


class ScriptSpec(NamedTuple):
    """The calling convention of one script in ``lua/``."""

    name: str
    #: its own arguments, ARGV[4], ARGV[5], ... in order (``A_<NAME>`` in Lua)
    args: tuple[str, ...] = ()
    #: the repeated arguments after them (a group per item), e.g. ("id", "session");
    #: in Lua they start at ARGV[REST]
    rest: tuple[str, ...] = ()
    #: the reply's fixed fields, in order (an empty tuple: a plain value)
    reply: tuple[str, ...] = ()
    #: the reply's repeated group, after the fixed fields
    rows: tuple[str, ...] = ()

    def argv(self, head: Sequence[Any], values: Mapping[str, Any],
             rest: Sequence[Any] = ()) -> list[Any]:
        """ARGV for this script: the common ``head``, its arguments by name, then ``rest``:
        the repeated groups, flat (each group in the order of ``self.rest``)."""
        if len(values) != len(self.args) or any(a not in values for a in self.args):
            raise TypeError(f"script {self.name} takes {self.args}, not {tuple(values)}")
        if rest and (not self.rest or len(rest) % len(self.rest)):
            raise TypeError(f"script {self.name}: repeated arguments come as {self.rest}")
        return [*head, *(values[a] for a in self.args), *rest]

    def decode(self, reply: Sequence[Any]) -> Reply:
        """The reply's fixed fields by name and its repeated groups as named tuples
        (:func:`row_type`)."""
        n = len(self.reply)
        fields = dict(zip(self.reply, reply[:n], strict=True))
        width = len(self.rows)
        if not width or len(reply) <= n:
            return Reply(fields, [])
        make, cls = tuple.__new__, row_type(self.name)
        return Reply(fields, [make(cls, reply[i:i + width]) for i in range(n, len(reply), width)])


_PAIRS = ("id", "session")
#: an item as peek.lua and item.lua return it (the one list of its fields: the scripts'
#: headers name this one, and reads.py reads them by name): data false = a ghost (an id with
#: no data); holder and deadline_ms, the lease's (of the last holder when abandoned = 1: in
#: processing, its lease ran out); score, when due (delayed) or died (dead), else -1;
#: dead_info, the dead_info JSON; then the per-item fields peek carries (fields.py: each as
#: stored in its hash, false when none, or for a dead item, whose are in dead_info)
_PEEKED = ("id", "data", "attempts", "holder", "deadline_ms", "score", "dead_info",
           "abandoned", *names(PEEK))
#: a leased item as lease.lua and reclaim.lua return it: then the fields lease carries
_LEASED = ("id", "data", "attempt", *names(LEASE))

SPECS: dict[str, ScriptSpec] = {s.name: s for s in (
    ScriptSpec("push", ("front", "delay_ms", "expire_ms", "batch", "batch_ttl_ms", "after",
                        "after_mode", "fresh"), ("id", "data")),
    # the last command of a bulk push's transaction (core/pushing/bulk_tx.py): ids, one argument
    ScriptSpec("push_commit", ("count", "front", "stamp_ms", "ids")),
    ScriptSpec("lease", ("count", "lease_ms", "session", "max_attempts", "at_most_once"),
               _PAIRS, ("status", "deadline_ms", "next_due_ms", "completions"), _LEASED),
    ScriptSpec("complete", (), _PAIRS),
    ScriptSpec("fail", ("error", "retry_ms", "dead_reason", "max_attempts", "backoff_ms",
                        "backoff_max_ms", "jitter"), _PAIRS, (), ("code", "due_ms")),
    ScriptSpec("extend", ("lease_ms",), _PAIRS, (), ("code", "deadline_ms")),
    ScriptSpec("retake", ("lease_ms", "session"), ("id",), (), ("code", "deadline_ms")),
    ScriptSpec("release", ("session",), ("id",)),
    ScriptSpec("cancel", ("error",), ("id",)),
    ScriptSpec("reclaim", ("lease_ms", "session"), ("id", "old_session"), ("deadline_ms",),
               _LEASED),
    ScriptSpec("clean", ("limit", "left", "grace_ms", "max_attempts", "front", "dry_run",
                         "pass_start", "sample", "expired_offset"),
               (), ("left", "recovered", "dropped", "dead", "suspects", "promoted",
                    "more_due", "pass_start", "pruned", "expired_offset", "batch_items")),
    ScriptSpec("deep_clean", ("grace_ms", "max_attempts", "front", "dry_run"), ("id",),
               ("recovered", "dead", "suspects")),
    ScriptSpec("prune", ("dry_run", "what"), ("id",)),
    ScriptSpec("history"),
    ScriptSpec("requeue_dead", ("target", "dry_run", "mode"), ("arg",),
               ("requeued", "skipped", "missing"), ("id",)),
    ScriptSpec("purge", ("state", "batch"), ("id",)),
    # then the counts it reads, in the order of counts.py
    ScriptSpec("stats", (), (), ("now_ms", "other_generation", "peer_leased", "looked",
                                 *reply_fields()), ("counter", "value")),
    ScriptSpec("peek", ("state", "offset", "count", "from", "start_at"), (), (), _PEEKED),
    ScriptSpec("item", ("id",), (), ("state",), _PEEKED),
    # a page of processing: the live leases stats' P:leases does not count (a peer's)
    ScriptSpec("peer_leases", ("offset", "count"), (), ("peer_leased", "looked")),
    # fleet-wide limits (docs/DESIGN.md section 9): set, clear or show P:limits
    ScriptSpec("limit", ("mode", "tenant", "rate", "interval_us", "burst", "max_in_flight"), (),
               ("rate", "interval_us", "burst", "max_in_flight", "in_flight", "now_ms")),
    ScriptSpec("holders", ("offset", "count"), (), (),
               ("id", "session", "deadline_ms", "live")),
    ScriptSpec("purge_ids", ("state", "low", "high"), ("id",), (), ("id",)),
    # mode "set" (rest: the window in ms) and "clear" (rest: ids) reply with a number;
    # "list" (rest: offset, count) with these fields and rows
    ScriptSpec("dedup", ("mode",), ("arg",), ("window_ms", "now_ms", "remembered"),
               ("id", "until_ms")),
    # batches (docs/DESIGN.md section 8): a push stream's hold on a batch ("open", "close")
    ScriptSpec("batch_hold", ("name", "mode", "ttl_ms")),
    # complete with a result per item (kept for batch items): triples id, session, result
    ScriptSpec("complete_result", (), ("id", "session", "result")),
    # clean: a page of P:item_batch; entries of items a peer completed counted completed
    ScriptSpec("batch_sweep", ("cursor", "count"), (), ("cursor", "counted")),
    # clean: the next items push --after holds for a finished batch, released; "verdict"
    # "0"/"1": a sharded queue's whole batch done (without, with a dead item)
    ScriptSpec("batch_after", ("name", "verdict")),
    # fair queues: a page of the ring of tenants with work (the manual's "Fair queues")
    ScriptSpec("tenants", ("offset", "size"), (), ("tenants", "default_depth"),
               ("tenant", "depth")),
)}

#: Every script the engine runs (``lua/<name>.lua``).
SCRIPTS = tuple(SPECS)
