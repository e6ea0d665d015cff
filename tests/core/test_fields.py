"""The per-item fields, declared once (rq_cli/core/fields.py): what follows from a declaration,
checked for every field, and each reply reading them from a real server."""

from __future__ import annotations

import dataclasses
import json

import pytest

from rq_cli.core import fields, keys, scripts
from rq_cli.core.queue import WorkQueue
from rq_cli.core.reports import PeekedItem
from rq_cli.core.types import LeasedItem
from rq_cli.shapes import ITEM_SCHEMAS, lease_row, peek_row, schema

#: the item type each reply decodes into
TYPES = {fields.LEASE: LeasedItem, fields.PEEK: PeekedItem}


@pytest.mark.parametrize("field", fields.ITEM_FIELDS, ids=lambda f: f.name)
def test_each_field_is_declared_completely(field: fields.ItemField) -> None:
    """Its hash is a per-item hash of keys.FIXED_KEYS; its replies, kind and column are
    known; each item type it is carried by has an attribute for it, None by default; the
    schema of each reply lists it; the scripts' rows end with it."""
    meta_hashes = {k.name for k in keys.FIXED_KEYS if k.role == "meta" and k.type == "hash"}
    assert field.key in meta_hashes
    assert field.kind in ("time", "text")
    assert field.replies and set(field.replies) <= set(TYPES)
    assert field.doc.endswith(".")
    for reply in field.replies:
        attrs = {f.name: f for f in dataclasses.fields(TYPES[reply])}
        assert field.name in attrs, f"{TYPES[reply].__name__} lacks {field.name}"
        assert attrs[field.name].default is None
        name = next(n for n, r in ITEM_SCHEMAS.items() if r == reply)
        assert schema(name)["properties"][field.name]["description"] == field.doc
        assert field.name in scripts.SPECS[reply].rows
    for reply, script in ((fields.LEASE, "reclaim"), (fields.PEEK, "item")):
        rows, carried = scripts.SPECS[script].rows, fields.names(reply)
        assert rows[len(rows) - len(carried):] == carried


def test_the_scripts_read_the_declared_hashes_in_order() -> None:
    """The generated Lua tables name each reply's hashes in declaration order."""
    peek = scripts.source("peek")
    wanted = ", ".join(f"K_{f.key.upper()}" for f in fields.carried(fields.PEEK))
    assert f"local PEEK_FIELD_KEYS = {{{wanted}}}" in peek
    lease = scripts.source("lease")
    wanted = ", ".join(f"K_{f.key.upper()}" for f in fields.carried(fields.LEASE))
    assert f"local LEASE_FIELD_KEYS = {{{wanted}}}" in lease


def test_peek_and_item_carry_the_declared_fields_live_and_dead(r) -> None:
    """A live item's fields come from their hashes; a dead one's from its dead_info entry;
    the JSON line has the ``always`` fields (null when unknown) and the others when set."""
    q = WorkQueue(r, "jobs", session="w")
    q.push(["{}"])
    [item] = q.lease(1)
    assert q.fail([item.id], error="boom", retry_in=60)[0].ok
    [live] = q.peek("delayed")
    assert live.error == "boom" and live.enqueued_at is not None
    shown = q.item(item.id)
    assert shown is not None and shown.error == "boom"
    q.cancel([item.id], error="gone")
    [dead] = q.peek("dead")
    assert dead.error == "gone" and dead.enqueued_at == live.enqueued_at
    line = json.loads(json.dumps(peek_row(dead), default=lambda b: b.decode()))
    assert line["enqueued_at"] == live.enqueued_at and line["error"] == "gone"
    assert "tenant" not in line
    never = PeekedItem(id="x", state="pending", data=b"", attempts=0)
    assert peek_row(never)["enqueued_at"] is None


def test_lease_rows_carry_the_declared_fields() -> None:
    """lease_row writes each lease field that is set (none are set on a bare item)."""
    item = LeasedItem("jobs", "1", b"{}", 1, 1.0, "s")
    row = lease_row("jobs", item)
    assert set(row) == {"queue", "id", "data", "attempt", "lease_expires_at", "session",
                        *(f.name for f in fields.carried(fields.LEASE) if f.always)}


def test_the_tables_have_a_column_per_declared_column() -> None:
    """lease's and peek's tables (every state) show each field they carry that has a column,
    under its header."""
    from rq_cli.cli.inspect import _peek_columns
    from rq_cli.cli.leasing import LEASE_COLUMNS

    tables = {fields.LEASE: [LEASE_COLUMNS],
              fields.PEEK: [_peek_columns(s) for s in
                            ("pending", "processing", "delayed", "dead", "all")]}
    for reply, columns in tables.items():
        for field in fields.carried(reply):
            for cols in columns:
                headers = {c.key: c.header for c in cols}
                assert headers.get(field.name) == field.column or \
                    (field.column is None and field.name not in headers)
