"""docs/DESIGN.md kept true where it can drift: the key tables of section 2 against
rq_cli/core/keys.py (and the words of rq_cli/core/codes.py), the layer list of section 1
against the package, the test layout of section 6 against tests/. No server needed."""

from __future__ import annotations

import re
from pathlib import Path

from rq_cli.core import codes, keys

ROOT = Path(__file__).resolve().parents[2]
DESIGN = (ROOT / "docs" / "DESIGN.md").read_text()
PACKAGE = ROOT / "rq_cli"


def section(number: int) -> str:
    start = DESIGN.index(f"\n## {number}. ")
    end = DESIGN.find("\n## ", start + 1)
    return DESIGN[start:] if end < 0 else DESIGN[start:end]


def key_rows() -> dict[str, tuple[str, str]]:
    """key -> (type, meaning), from the tables of section 2."""
    rows = re.findall(r"^\| `(P:[^`]+)` \| ([^|]+) \| (.+) \|$", section(2), re.M)
    return {key: (kind.strip(), meaning.strip()) for key, kind, meaning in rows}


def code_keys() -> dict[str, str | None]:
    """Every key of a queue as keys.py defines it -> its type (None: not declared there)."""
    found: dict[str, str | None] = {f"P:{k.name}": k.type for k in keys.FIXED_KEYS}
    found.update({f"P:{family}:<id>": None for family in keys.ITEM_FAMILIES})
    found[f"P:{keys.TENANT_QUEUE}:<tenant>"] = "list"
    found[f"P:{keys.CONTROL}:<session digest>"] = "string + TTL"
    found[f"P:{keys.BATCH}:<batch>"] = "hash"
    found[f"P:{keys.BATCH_WAKE}:<batch>"] = "list"
    found[f"P:{keys.RESULTS}:<batch>"] = "hash"
    found[f"P:{keys.AFTER}:<batch>"] = "list"
    return found


def test_the_key_tables_are_the_key_schema_of_keys_py() -> None:
    rows, defined = key_rows(), code_keys()
    assert sorted(rows) == sorted(defined)
    for key, kind in defined.items():
        assert kind is None or rows[key][0] == kind, (key, rows[key][0], kind)
    assert len(rows) > 20  # the tables were really read


def test_the_key_tables_name_the_counters_and_reasons_of_codes_py() -> None:
    rows = key_rows()
    counters = rows["P:counters"][1].split(":", 1)[1].rstrip(".")
    assert [c.strip() for c in counters.split(",")] == list(codes.COUNTERS)
    reasons = rows["P:dead_info"][1].split("reason:", 1)[1].rstrip(".")
    assert [r.strip() for r in reasons.split(",")] == list(codes.DEAD_REASONS)


def layer_block() -> str:
    text = section(1)
    return text[text.index("```\nrq_cli/") + 4: text.index("\n```", text.index("```\nrq_cli/"))]


def test_the_layer_list_names_every_package_and_module() -> None:
    block = layer_block()
    named = set(re.findall(r"\b([\w]+\.py)\b", block))
    dirs = set(re.findall(r"^\s+(\w+)/\s", block, re.M))  # a folder opens its line
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    top = {p.name for p in PACKAGE.glob("*.py")} - {"__init__.py", "__main__.py"}
    assert packages <= dirs, packages - dirs
    assert top <= named, top - named
    core = {p.name for p in (PACKAGE / "core").glob("*.py")} - {"__init__.py"}
    for package in ("core", "worker", "ops", "dash", "web"):
        modules = {p.name for p in (PACKAGE / package).glob("*.py")} - {"__init__.py"}
        assert modules <= named, (package, modules - named)
    assert core <= named
    # and everything it names exists (a moved or renamed module shows up here)
    existing = {p.name for p in PACKAGE.rglob("*.py")}
    assert named <= existing, named - existing
    dir_names = {p.name for p in PACKAGE.rglob("*") if p.is_dir()} | {"rq_cli"}
    assert dirs <= dir_names, dirs - dir_names


def test_the_test_layout_names_every_test_folder() -> None:
    folders = {p.parent.name for p in (ROOT / "tests").glob("*/test_*.py")}
    named = set(re.findall(r"`tests/(\w+)`", section(6)))
    assert folders == named
