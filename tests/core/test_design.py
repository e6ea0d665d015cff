"""docs/DESIGN.md kept true where it can drift: the key tables of section 2 against
rq_cli/core/contract/keys.py (and the words of rq_cli/core/codes.py), the layer list of section 1
(and the development guide's, docs/development.md) against the package, the test layout of
section 6 against tests/. No server needed."""

from __future__ import annotations

import re
from pathlib import Path

from rq_cli.core import codes
from rq_cli.core.contract import keys

ROOT = Path(__file__).resolve().parents[2]
DESIGN = (ROOT / "docs" / "DESIGN.md").read_text()
DEVELOPMENT = (ROOT / "docs" / "development.md").read_text()
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
    found[f"P:{keys.SHARDS}"] = found[f"P:{keys.FRONTS}"] = "hash"  # (a sharded queue's)
    found[f"P:{keys.AUDIT}"] = "list"
    found[f"P:{keys.BATCH}:<batch>"] = "hash"
    found[f"P:{keys.BATCH_WAKE}:<batch>"] = "list"
    found[f"P:{keys.RESULTS}:<batch>"] = "hash"
    found[f"P:{keys.AFTER}:<batch>"] = "list"
    found[f"P:{keys.BATCH_VERDICT}:<batch>"] = "string"  # (a sharded queue's)
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


def layer_block(text: str | None = None) -> str:
    """The layer list (a code block that opens with ``rq_cli/``) of ``text``, by default
    DESIGN's section 1."""
    text = section(1) if text is None else text
    start = text.index("\nrq_cli/\n") + 1
    return text[start: text.index("\n```", start)]


def listed(block: str) -> tuple[set[str], set[str]]:
    """The modules (``name.py``) and the folders (a folder opens its line) a list names."""
    return (set(re.findall(r"\b([\w]+\.py)\b", block)),
            set(re.findall(r"^\s+(\w+)/\s", block, re.M)))


def test_the_layer_list_names_every_package_and_module() -> None:
    named, dirs = listed(layer_block())
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    top = {p.name for p in PACKAGE.glob("*.py")} - {"__init__.py", "__main__.py"}
    assert packages <= dirs, packages - dirs
    assert top <= named, top - named
    core = {p.name for p in (PACKAGE / "core").rglob("*.py")} - {"__init__.py"}
    for package in ("core", "worker", "ops", "console", "dash", "web"):
        modules = {p.name for p in (PACKAGE / package).glob("*.py")} - {"__init__.py"}
        assert modules <= named, (package, modules - named)
    assert core <= named
    # and everything it names exists (a moved or renamed module shows up here)
    existing = {p.name for p in PACKAGE.rglob("*.py")}
    assert named <= existing, named - existing
    dir_names = {p.name for p in PACKAGE.rglob("*") if p.is_dir()} | {"rq_cli"}
    assert dirs <= dir_names, dirs - dir_names


def test_the_development_guide_lists_the_same_layers_and_every_core_module() -> None:
    """docs/development.md repeats the layer list for contributors: the same packages as
    DESIGN's, every module of core/ (what a new engine module is placed among), and
    nothing that does not exist."""
    named, dirs = listed(layer_block(DEVELOPMENT))
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert dirs & packages == listed(layer_block())[1] & packages == packages
    core = {p.name for p in (PACKAGE / "core").rglob("*.py")} - {"__init__.py"}
    assert core <= named, core - named
    assert named <= {p.name for p in PACKAGE.rglob("*.py")}
def test_the_development_guide_names_every_package_and_the_consoles_modules() -> None:
    # the guide repeats the layer list (in short): each package, and the consoles' parts
    guide = (ROOT / "docs" / "development.md").read_text()
    start = guide.index("```text\nrq_cli/")
    block = guide[start:guide.index("\n```", start + 4)]
    dirs = set(re.findall(r"^\s+(\w+)/\s", block, re.M))
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert packages <= dirs, packages - dirs
    named = set(re.findall(r"\b([\w]+\.py)\b", block))
    assert {p.name for p in (PACKAGE / "console").glob("*.py")} - {"__init__.py"} <= named
    existing = {p.name for p in PACKAGE.rglob("*.py")}
    assert named <= existing, named - existing


def test_both_layer_lists_name_every_folder_of_the_core() -> None:
    folders = {p.parent.name for p in (PACKAGE / "core").glob("*/__init__.py")}
    assert len(folders) > 3  # (the core is grouped)
    for text in (None, DEVELOPMENT):
        assert folders <= listed(layer_block(text))[1], folders - listed(layer_block(text))[1]


def test_the_top_of_the_core_is_the_library_api() -> None:
    """The modules at core/'s top are those docs/library.md imports from (its public API);
    everything else is in a folder."""
    library = (ROOT / "docs" / "library.md").read_text()
    folders = {p.parent.name for p in (PACKAGE / "core").glob("*/__init__.py")}
    named = set(re.findall(r"rq_cli\.core\.(\w+)", library)) - folders
    assert named == {p.stem for p in (PACKAGE / "core").glob("*.py")} - {"__init__"}


def test_the_test_layout_names_every_test_folder() -> None:
    folders = {p.parent.name for p in (ROOT / "tests").glob("*/test_*.py")}
    named = set(re.findall(r"`tests/(\w+)`", section(6)))
    assert folders == named


#: Module-level numbers of core/ that are no limit (limits.py holds every limit): an error
#: group key's width and the UUIDv7 id's shape (formats).
NOT_LIMITS = {("errnorm.py", "KEY_LEN"), ("ages.py", "TIME_DIGITS"), ("ages.py", "V7_PATTERN"),
              ("ages.py", "_TIME_MAX")}


def numeric_constants(source: str) -> list[str]:
    """The names ``source`` binds at module level to a number, or to arithmetic on numbers
    and names (``min(100, SLOW_BATCH)``, ``10 * DAY``), written there."""
    import ast

    def numeric(node: ast.AST) -> bool:
        if isinstance(node, ast.Constant):
            return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
        if isinstance(node, ast.UnaryOp):
            return numeric(node.operand)
        if isinstance(node, ast.BinOp):
            return numeric(node.left) or numeric(node.right)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            return node.func.id in ("min", "max") and any(numeric(a) for a in node.args)
        return False

    names = []
    for stmt in ast.parse(source).body:
        targets = (stmt.targets if isinstance(stmt, ast.Assign) else
                   [stmt.target] if isinstance(stmt, ast.AnnAssign) and stmt.value else [])
        value = getattr(stmt, "value", None)
        if value is not None and numeric(value):
            names += [t.id for t in targets if isinstance(t, ast.Name)]
    return names


def test_every_limit_of_the_engine_is_in_limits_py() -> None:
    """core/contract/limits.py says "every limit, once": no other module of core/ sets a number."""
    found = {(path.name, name) for path in (PACKAGE / "core").rglob("*.py")
             if path.name != "limits.py" for name in numeric_constants(path.read_text())}
    assert found <= NOT_LIMITS, found - NOT_LIMITS
    # the check sees a limit, however written
    assert numeric_constants("A = 5\nB: float = 0.5\nC = min(100, D)\nE = 'x'\n") == \
        ["A", "B", "C"]


def test_core_re_exports_nothing() -> None:
    """core/__init__.py: "one import path per name: no re-exports". No module of core/
    imports a name as itself (``from .x import A as A``) or lists one it imports in
    ``__all__``, nor hands out another module's names on demand (``__getattr__``)."""
    import ast

    for path in sorted((PACKAGE / "core").rglob("*.py")):
        tree = ast.parse(path.read_text())
        imported = set()
        for node in tree.body:
            if isinstance(node, ast.ImportFrom):
                names = {a.name for a in node.names}
                assert not [a for a in node.names if a.asname == a.name], (path.name, names)
                imported |= {a.asname or a.name for a in node.names}
            assert not (isinstance(node, ast.FunctionDef) and node.name == "__getattr__"), \
                path.name
            if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
                listed_names = {e.value for e in getattr(node.value, "elts", [])
                                if isinstance(e, ast.Constant)}
                assert not listed_names & imported, (path.name, listed_names & imported)
