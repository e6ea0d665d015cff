"""The Stats counts, declared once (rq_cli/core/contract/counts.py): what follows from each line,
checked for every count and counter, and no other list of them in the package."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

import pytest

import rq_cli
from rq_cli.core.codes import COUNTERS, STATES, Counter, ItemState
from rq_cli.core.contract import counts, specs
from rq_cli.core.reports import Stats
from rq_cli.output.metrics import COUNTER_HELP, MEASURES, metric_names
from rq_cli.output.shapes import schema
from rq_cli.settings.rules import CHECK_RULES

PACKAGE = Path(rq_cli.__file__).parent


def stats_options() -> set[str]:
    """The options of ``rq-cli stats``, as typed."""
    import typer

    from rq_cli.cli.inspect import stats

    app = typer.Typer()
    app.command()(stats)
    return {o for p in typer.main.get_command(app).params for o in getattr(p, "opts", ())}
NAMES = frozenset(c.name for c in counts.COUNTS)


@pytest.mark.parametrize("count", counts.COUNTS, ids=lambda c: c.name)
def test_each_count_is_declared_completely(count: counts.Count) -> None:
    """Stats has it; the stats script replies with it (or reads.py works it out); the schema
    describes it in each stats line (and a shard's row, unless it is not there); the table,
    the watch, the sort keys, the thresholds and Prometheus follow its line."""
    from rq_cli.cli.inspect import STATS_COLUMNS, StatsSort
    from rq_cli.cli.watch import DASHBOARD_COLUMNS

    assert count.name in {f.name for f in dataclasses.fields(Stats)}
    assert count.kind in counts.KINDS
    assert count.doc.endswith(".")
    assert count.kind != counts.STATE or count.name in STATES
    if count.reply is not None:
        assert count.reply in specs.SPECS["stats"].reply
    defs = schema("stats")["$defs"]
    for name in ("stats", "watch"):
        assert defs[name]["properties"][count.name]["description"] == count.doc
        assert count.name in defs[name]["required"]
    for name in ("stats", "error"):
        shard = defs[name]["properties"]["shards"]["items"]["properties"]
        assert (count.name in shard) == count.in_shards
    column = next(c for c in STATS_COLUMNS if c.key == count.name)
    assert column.title == (count.heading or count.name.replace("_", " "))
    assert (count.name in {c.key for c in DASHBOARD_COLUMNS}) == (count.watch is not None)
    assert (count.short in {s.value for s in StatsSort}) == count.sort
    assert (count.short in MEASURES) == (count.threshold is not None)
    assert (f"max_{count.short}" in CHECK_RULES) == (count.threshold is not None)
    assert (f"--max-{count.short}" in stats_options()) == (count.threshold is not None)
    if count.metric is not None:
        assert count.metric[0] in metric_names()


def test_the_console_sorts_and_shows_what_the_watch_does() -> None:
    """The console's overview: the same sort keys as ``stats --sort`` (abandoned and errors
    included) and the watch's count columns, from the declaration."""
    pytest.importorskip("textual")
    from rq_cli.cli.inspect import StatsSort
    from rq_cli.cli.watch import DASHBOARD_COLUMNS
    from rq_cli.dash import app

    assert app.SORTS == tuple(s.value for s in StatsSort) == counts.SORTS
    assert {"abandoned", "errors"} <= set(app.SORTS)
    shown = [key for key, _, _ in app.COLUMNS if key in NAMES]
    assert shown == [c.key for c in DASHBOARD_COLUMNS if c.key in NAMES]


def test_the_sort_keys_order_rows_by_their_count() -> None:
    """Every count's sort key puts the largest first, errors first of all."""
    from rq_cli.ops.polling import sort_rows

    for count in (c for c in counts.COUNTS if c.sort):
        rows = [{"queue": "a", count.name: 1}, {"queue": "b", "error": "down"},
                {"queue": "c", count.name: 5}, {"queue": "d", count.name: None}]
        assert [r["queue"] for r in sort_rows(rows, count.short)] == ["b", "c", "a", "d"]


def test_every_counter_has_its_meaning_and_the_schema_lists_them() -> None:
    assert [r.counter for r in counts.RUNNING] == list(Counter)
    assert list(COUNTER_HELP) == list(COUNTERS)
    assert all(r.help.endswith(".") for r in counts.RUNNING)
    stats = schema("stats")["$defs"]["stats"]["properties"]["counters"]
    assert list(stats["properties"]) == stats["required"] == list(COUNTERS)
    rates = schema("stats")["$defs"]["watch"]["properties"]["rates"]["anyOf"][0]
    assert rates["required"] == list(counts.RATE_COUNTERS)


def test_the_stats_schema_file_leaves_the_counts_to_the_declaration() -> None:
    text = (PACKAGE / "schemas" / "stats.schema.json").read_text()
    shipped = json.loads(text)["$defs"]
    for name in ("stats", "watch"):
        assert not set(shipped[name]["properties"]) & NAMES
        assert "properties" not in shipped[name]["properties"]["counters"]


#: The enums of codes.py whose members' values may name a count (``ItemState.DEAD.value``).
ENUMS = {e.__name__: e for e in (ItemState, Counter)}


def _bound(tree: ast.AST) -> dict[str, str]:
    """The module-level names bound to a string (``ABANDONED = "abandoned"``)."""
    return {t.id: stmt.value.value for stmt in getattr(tree, "body", ())
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str)
            for t in stmt.targets if isinstance(t, ast.Name)}


def _value(item: ast.AST, bound: dict[str, str]) -> object:
    """What ``item`` names: a literal, a name bound to a string, or an enum member of
    codes.py (``ItemState.DEAD`` or ``ItemState.DEAD.value``)."""
    if isinstance(item, ast.Constant):
        return item.value
    if isinstance(item, ast.Name):
        return bound.get(item.id)
    if isinstance(item, ast.Attribute) and item.attr == "value":
        item = item.value
    if isinstance(item, ast.Attribute) and isinstance(item.value, ast.Name) \
            and item.value.id in ENUMS:
        member = getattr(ENUMS[item.value.id], item.attr, None)
        return getattr(member, "value", None)
    return None


def _listed(node: ast.AST, bound: dict[str, str]) -> set[str]:
    """The count names a literal list, tuple, set, dict (keys), call (keywords, or the
    first value of its arguments: ``Column("pending", ...)``) or class body holds, written
    as strings, names bound to them or enum members of codes.py."""
    def first(item: ast.AST) -> object:
        if isinstance(item, (ast.Constant, ast.Name, ast.Attribute)):
            return _value(item, bound)
        if isinstance(item, ast.Call) and item.args:
            return _value(item.args[0], bound)
        if isinstance(item, (ast.Tuple, ast.List)) and item.elts:
            return first(item.elts[0])
        return None

    values: list[object] = []
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        values = [first(e) for e in node.elts]
    elif isinstance(node, ast.Dict):
        values = [k.value for k in node.keys if isinstance(k, ast.Constant)]
    elif isinstance(node, ast.Call):
        values = [k.arg for k in node.keywords]
    elif isinstance(node, ast.ClassDef):
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                values.append(stmt.target.id)
            elif isinstance(stmt, ast.Assign):
                values += [t.id for t in stmt.targets if isinstance(t, ast.Name)]
    return {v for v in values if isinstance(v, str) and v in NAMES}


def lists_of_counts(source: str) -> list[tuple[int, list[str]]]:
    """Each place in ``source`` that lists three or more counts by name (a list of the item
    states alone is the states', codes.ItemState's, not the counts')."""
    found = []
    tree = ast.parse(source)
    bound = _bound(tree)
    for node in ast.walk(tree):
        names = _listed(node, bound)
        if len(names) >= 3 and not names <= set(STATES):
            found.append((getattr(node, "lineno", 0), sorted(names)))
    return found


def test_no_other_module_lists_the_counts() -> None:
    """Only counts.py names them together; Stats (reports.py) is the typed value that
    carries them, tied to the declaration above. (keys.py names keys: P:processing,
    P:delayed, P:dead, P:paused, P:tenants are keys, not counts.)"""
    allowed = {PACKAGE / "core" / "contract" / "counts.py",
               PACKAGE / "core" / "contract" / "keys.py"}
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        hits = lists_of_counts(path.read_text())
        if path == PACKAGE / "core" / "reports.py":
            hits = [h for h in hits if h[1] != sorted(NAMES)]  # the Stats class itself
        if hits and path not in allowed:
            found[str(path.relative_to(PACKAGE))] = hits
    assert not found


def test_the_scan_finds_a_list_of_counts() -> None:
    """The scan above can fail: each way of listing the counts is caught."""
    for source in ('SORTS = ("given", "pending", "dead", "age", "abandoned")',
                   'COLS = [Column("pending"), Column("leased"), Column("due")]',
                   'COLS = (("pending", "p"), ("leased", "l"), ("paused", "x"))',
                   'row = {"pending": 1, "abandoned": 2, "tenants": 3}',
                   'Stats(pending=1, leased=2, dead=3)',
                   'class S:\n    pending: int\n    dead: int\n    abandoned: int',
                   'A = "abandoned"\nCOLS = (ItemState.PENDING.value, Counter.LEASED, A)'):
        assert lists_of_counts(source), source
    assert not lists_of_counts('STATES = ("pending", "processing", "delayed", "dead")')
