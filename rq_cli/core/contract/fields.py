"""An item's per-item fields, declared once (:data:`ITEM_FIELDS`). No Redis, no Typer, no rich.

A per-item field is a value rq-cli keeps for each item in a per-item hash of keys.py
``FIXED_KEYS`` (role "meta": id -> value, dropped with its item) and shows on the replies
that carry items. From its one :class:`ItemField` line follow:

- the scripts' readers and emitters: ``LEASE_FIELD_KEYS`` and ``PEEK_FIELD_KEYS``, the
  tables of the hashes each reply reads (generated into the Lua by scripts.py), and the
  ``_common.lua`` helpers that read them (``put_item_fields``, ``lease_fields``);
- the reply rows of ``lease``/``reclaim`` and ``peek``/``item`` (specs.py: the rows end
  with these fields' names, in this order);
- the Python item types' values (:class:`~rq_cli.core.types.LeasedItem`,
  :class:`~rq_cli.core.reports.PeekedItem` have an attribute per field they carry:
  tests/core/test_fields.py ties them), decoded by :func:`decoded`;
- the JSON lines of ``lease`` and ``peek`` (shapes.py ``lease_row``, ``peek_row``) and
  their schemas' properties (shapes.py ``schema`` adds them to the shipped files), and so
  the manual's field list (docs/reference/json.md is built from the schemas);
- the table columns of ``lease`` and ``peek`` (cli/leasing.py, cli/inspect.py),
  the console's item panel (dash/item.py) and the web view's tables (web/views.py).

**Adding a field** stored in an existing hash: one line here, the attribute on the item
types it is carried by, its test and its CHANGELOG entry. A field in a new hash also needs the
hash (keys.py, with the writer that fills it).
"""

from __future__ import annotations

from functools import cache
from typing import Any, NamedTuple

from .util import secs, text

#: The replies that carry items: ``lease`` (the scripts lease and reclaim: LeasedItem) and
#: ``peek`` (the scripts peek and item, so ``peek`` and ``peek --id``: PeekedItem).
LEASE = "lease"
PEEK = "peek"


class ItemField(NamedTuple):
    """One per-item field."""

    name: str  #: the attribute of the item types, the JSON field, and the reply row's name
    #: "time": stored in ms, shown in epoch seconds (ms precision); "text": a string
    kind: str
    key: str  #: the per-item hash of keys.FIXED_KEYS that stores it (id -> value)
    replies: tuple[str, ...]  #: :data:`LEASE`, :data:`PEEK`: the replies that carry it
    doc: str  #: its meaning, one sentence (the schemas' description)
    #: the key of a dead item's ``P:dead_info`` entry that keeps it when the item dies (its
    #: hash entry goes with the item's bookkeeping); a "time" there is in seconds
    dead: str | None = None
    #: in every JSON line (null when unknown), rather than only when set
    always: bool = False
    #: its table column's header (None: not a column), its kind (tables.Column), how soon a
    #: narrow terminal drops it (0: never), and whether the column is left out when no row
    #: has a value (a stream decides on its first page: a column expected further down,
    #: such as a retried pending item's error, is kept)
    column: str | None = None
    column_kind: str = "text"
    drop: int = 1
    column_optional: bool = True


ITEM_FIELDS: tuple[ItemField, ...] = (
    ItemField("enqueued_at", "time", "enqueued", (PEEK,),
              "When it was pushed: Unix epoch seconds, millisecond precision (the server's "
              "clock). null: unknown.", dead="enqueued", always=True, column="enqueued",
              column_kind="time", drop=3),
    ItemField("error", "text", "errors", (PEEK,),
              "The last error (fail --error, or why it died).", dead="error", column="error",
              column_kind="words", drop=0, column_optional=False),
    ItemField("tenant", "text", "item_tenant", (PEEK,),
              "Fair queues: the tenant's sub-queue.", dead="tenant"),
    # (peek's `error` is the same stored value: a lease line names it for what it is there)
    ItemField("last_error", "text", "errors", (LEASE,),
              "The error its last attempt failed with (fail --error; peek shows it as "
              "error); present only when it has one.", column="last error",
              column_kind="words", drop=2),
)


@cache
def carried(reply: str) -> tuple[ItemField, ...]:
    """The fields ``reply`` (:data:`LEASE`, :data:`PEEK`) carries, in declaration order."""
    return tuple(f for f in ITEM_FIELDS if reply in f.replies)


def names(reply: str) -> tuple[str, ...]:
    """The names of the fields ``reply`` carries: the end of its reply rows (specs.py)."""
    return tuple(f.name for f in carried(reply))


def decoded(reply: str, row: Any, dead: dict[str, Any] | None = None) -> dict[str, Any]:
    """The values of ``reply``'s fields in a decoded reply row (stored values, or false/None),
    by name, as the item types hold them; ``dead``, a dead item's ``P:dead_info`` entry
    read: where a field's hash had nothing, its value there."""
    out: dict[str, Any] = {}
    for f in carried(reply):
        stored = getattr(row, f.name)
        value: Any = None
        if f.kind == "time":
            if stored is not None and stored is not False:
                value = _secs(stored)
            elif dead and f.dead:
                was = dead.get(f.dead)
                if isinstance(was, (int, float)) and not isinstance(was, bool) \
                        and 0 <= was < 1e12:
                    value = round(float(was), 3)
        else:
            value = text(stored) if stored else None
            if value is None and dead and f.dead and isinstance(dead.get(f.dead), str):
                value = dead[f.dead]
        out[f.name] = value
    return out


def _secs(stored: Any) -> float | None:
    """A stored time in ms as epoch seconds; None for one that is no time (a value some
    other program wrote: the scripts read it with tonumber, which gives nil)."""
    try:
        ms = int(stored)
    except ValueError:
        return None
    return secs(ms) if ms >= 0 else None


def row(reply: str, item: Any, always: bool) -> dict[str, Any]:
    """``item``'s fields of ``reply`` for its JSON line: those with ``always`` set (null when
    unknown) when ``always``, else the others that are set."""
    out: dict[str, Any] = {}
    for f in carried(reply):
        if f.always != always:
            continue
        value = getattr(item, f.name)
        if always or value is not None:
            out[f.name] = value
    return out


def schema_properties(reply: str) -> tuple[dict[str, Any], list[str]]:
    """The JSON Schema properties of ``reply``'s fields, and those always present."""
    props: dict[str, Any] = {}
    for f in carried(reply):
        kind = "number" if f.kind == "time" else "string"
        props[f.name] = {"type": [kind, "null"] if f.always else kind, "description": f.doc}
    return props, [f.name for f in carried(reply) if f.always]


def lua_blocks(rare: frozenset[str]) -> list[tuple[str, str]]:
    """``LEASE_FIELD_KEYS`` and ``PEEK_FIELD_KEYS`` (the hashes each reply reads, as
    ``K_<NAME>``, in declaration order), and ``LEASE_FIELD_RARE`` (per lease field: true
    when its hash is one of the ``rare`` keys, absent when QUIET: not read)."""
    def keys(reply: str) -> str:
        return "{" + ", ".join(f"K_{f.key.upper()}" for f in carried(reply)) + "}"

    flags = ", ".join("true" if f.key in rare else "false" for f in carried(LEASE))
    return [("LEASE_FIELD_KEYS", f"local LEASE_FIELD_KEYS = {keys(LEASE)}"),
            ("LEASE_FIELD_RARE", f"local LEASE_FIELD_RARE = {{{flags}}}"),
            ("PEEK_FIELD_KEYS", f"local PEEK_FIELD_KEYS = {keys(PEEK)}")]
