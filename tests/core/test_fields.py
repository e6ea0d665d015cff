"""The per-item fields, declared once (rq_cli/core/contract/fields.py): what follows from a
declaration, checked for every field, and each reply reading them from a real server."""

from __future__ import annotations

import dataclasses
import json

import pytest

import rq_cli
from rq_cli.core.contract import fields, keys, specs
from rq_cli.core.queue import WorkQueue
from rq_cli.core.reports import PeekedItem
from rq_cli.core.scripting import scripts
from rq_cli.core.types import LeasedItem
from rq_cli.output.shapes import ITEM_SCHEMAS, lease_row, peek_row, schema

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
        assert field.name in specs.SPECS[reply].rows
    for reply, script in ((fields.LEASE, "reclaim"), (fields.PEEK, "item")):
        rows, carried = specs.SPECS[script].rows, fields.names(reply)
        assert rows[len(rows) - len(carried):] == carried


def test_the_shipped_schema_files_leave_the_declared_fields_to_the_declaration() -> None:
    """Each per-item field is said once: the schema files of the lines that carry items
    do not list them (rq_cli.output.shapes.schema adds them)."""
    from pathlib import Path

    folder = Path(rq_cli.__file__).parent / "schemas"
    for name, reply in ITEM_SCHEMAS.items():
        listed = json.loads((folder / f"{name}.schema.json").read_text())["properties"]
        assert not set(listed) & set(fields.names(reply)), name


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
    # a time some other program stored as no number reads as unknown, as tonumber would
    r.hset(q.keys.enqueued, "odd", "soon")
    r.set(q.keys.item("odd"), b"{}")
    r.lpush(q.keys.queue, "odd")
    [odd] = [i for i in q.peek("pending", count=5) if i.id == "odd"]
    assert odd.enqueued_at is None


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
    # a column not optional stays in a stream's table whose first page has no value for it
    # (a peek of pending items, retried ones with an error further down); --state all is
    # a mix of states: there every column of a state that has one may be missing
    pending = {c.key: c for c in _peek_columns("pending")}
    for field in fields.carried(fields.PEEK):
        if field.column and not field.always:
            assert pending[field.name].optional == field.column_optional
            assert {c.key: c for c in _peek_columns("all")}[field.name].optional


# -- last_error: a lease carries the error its last attempt failed with -------------------
def test_lease_carries_the_last_error_on_every_path(r) -> None:
    """The one-item path of a quiet queue, the batch loop, reclaim: each lease reads the
    item's stored error (P:errors, written by fail), none on a first attempt; it goes when
    the item is completed."""
    q = WorkQueue(r, "jobs", session="w")
    q.push(["a", "b", "c"])
    [first] = q.lease(1)  # (a quiet queue: nothing failed yet)
    assert first.attempt == 1 and first.last_error is None
    assert q.fail([first.id], error="smtp timeout", retry_in=0)[0].ok
    got = {i.id: i.last_error for i in q.lease(3)}  # (the batch loop)
    assert got == {first.id: "smtp timeout", **{i: None for i in got if i != first.id}}
    assert len(got) == 3
    assert q.fail([first.id], error="bad address", retry_in=0)[0].ok
    [again] = [i for i in q.lease(1) if i.id == first.id]
    assert again.attempt == 3 and again.last_error == "bad address"
    # a restarted worker reclaims it: the same error comes with it
    [back] = WorkQueue(r, "jobs", session="w2").reclaim(lambda s: s == "w")[-1:]
    assert back.id == first.id and back.last_error == "bad address"
    # peek's error is the same stored value; completed, the error goes with the item
    [peeked] = [i for i in q.peek("processing", count=5) if i.id == first.id]
    assert peeked.error == "bad address" and not hasattr(peeked, "last_error")
    assert q.complete([first.id])[0].ok
    assert r.hget(q.keys.errors, first.id) is None


def test_lease_reads_no_error_hash_on_a_quiet_queue(r) -> None:
    """No item ever failed (P:errors absent): the lease of one item reads no error."""
    q = WorkQueue(r, "jobs", session="w")
    q.push(["a"])
    r.config_resetstat()
    [item] = q.lease(1)
    assert item.last_error is None
    stats = r.info("commandstats")
    assert "cmdstat_hget" in stats and "cmdstat_hmget" not in stats  # (only P:attempts)
    assert stats["cmdstat_hget"]["calls"] == 1
