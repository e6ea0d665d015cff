"""The layering of docs/DESIGN.md section 1, checked on the source (no server needed).

- no import cycles between rq_cli's modules, counting imports inside functions (an import
  moved into a function to dodge a cycle is still a cycle, and the command table's loaders
  in rq_cli/cli/commands.py are such functions);
- no module imports by name (``import_module``): every import is one the graph sees;
- none either when imports under ``if TYPE_CHECKING:`` count too: a cycle that only
  annotations close is still design coupling (TYPE_ONLY_CORE_EDGES, empty now, stays so);
- no module imports another module's underscore names;
- the core (rq_cli/core/) imports neither Typer, Click nor rich, nor anything of the CLI;
- the documented library imports keep working.

"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rq_cli.cli.commands import COMMANDS

PACKAGE = Path(__file__).resolve().parents[2] / "rq_cli"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def runtime_imports(tree: ast.AST, type_checking: bool = False,
                    ) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement that runs (anywhere in the module), skipping TYPE_CHECKING
    blocks unless ``type_checking``."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if not type_checking and isinstance(node, ast.If) and is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def resolve(module: str, node: ast.ImportFrom) -> str:
    """The absolute module an ImportFrom names (``from ..x import y`` in a.b.c -> a.x)."""
    if not node.level:
        return node.module or ""
    is_package = MODULES[module].name == "__init__.py"
    base = module.split(".")
    base = base if is_package else base[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(module: str, type_checking: bool = False) -> list[tuple[str, list[str]]]:
    """(imported module, names imported from it) for each runtime import of ``module`` (and
    each under TYPE_CHECKING too, with ``type_checking``)."""
    tree = ast.parse(MODULES[module].read_text())
    result: list[tuple[str, list[str]]] = []
    for node in runtime_imports(tree, type_checking):
        if isinstance(node, ast.Import):
            result.extend((alias.name, []) for alias in node.names)
        else:
            target = resolve(module, node)
            names = [alias.name for alias in node.names]
            # `from pkg import submodule` imports the submodule
            subs = [n for n in names if f"{target}.{n}" in MODULES]
            result.extend((f"{target}.{n}", []) for n in subs)
            rest = [n for n in names if n not in subs]
            if rest or not subs:
                result.append((target, rest))
    return result


#: The command table: its loaders import every command module inside small functions.
COMMAND_TABLE = "rq_cli.cli.commands"

#: Imports under TYPE_CHECKING allowed to close a cycle in the core: none any more (bulk and
#: deep clean take the queue's base, core.codes holds the State types); nothing may be added.
TYPE_ONLY_CORE_EDGES: set[tuple[str, str]] = set()


def graph(type_checking: bool = False) -> dict[str, set[str]]:
    edges = {m: {t for t, _ in imports_of(m, type_checking) if t in MODULES and t != m}
             for m in MODULES}
    return edges


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_checker_sees_a_cycle_and_the_type_checking_exemption():
    # the checks below are only as good as this one: a cycle is found, a chain is not
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import x\n"
                     "def f():\n    import y\n")
    assert [a.name for n in runtime_imports(tree) if isinstance(n, ast.Import)
            for a in n.names] == ["y"]


def test_the_layers_are_folders():
    assert {"rq_cli.core", "rq_cli.cli", "rq_cli.core.queue", "rq_cli.core.contract.keys",
            "rq_cli.core.contract.limits", "rq_cli.core.scripting.scripts"} <= set(MODULES)
    assert (PACKAGE / "core" / "scripting" / "lua" / "_common.lua").is_file()


#: The layers of the engine (docs/DESIGN.md section 1), lowest first: a folder of core/, or
#: a module at its top (the library's public API). A module imports only from its own
#: layer and those before it (imports inside functions and under TYPE_CHECKING count).
CORE_LAYERS = ("codes", "contract", "types reports", "scripting", "operations", "pushing",
               "queue", "filtering history", "sharding", "fleet", "errgroups")


def core_layer(module: str) -> int | None:
    """The index in CORE_LAYERS of a module of rq_cli.core (None: the package itself)."""
    parts = module.split(".")
    if parts[:2] != ["rq_cli", "core"] or len(parts) < 3:
        return None
    return next(i for i, names in enumerate(CORE_LAYERS) if parts[2] in names.split())


def upward_imports(edges: dict[str, set[str]]) -> list[str]:
    """Each import of ``edges`` from a layer of the core to a later one."""
    return [f"{m} -> {t}" for m, targets in sorted(edges.items()) for t in sorted(targets)
            if (a := core_layer(m)) is not None and (b := core_layer(t)) is not None
            and b > a]


def test_every_part_of_the_core_has_its_layer():
    parts = {p.stem if p.suffix == ".py" else p.name for p in (PACKAGE / "core").iterdir()
             if p.suffix == ".py" or (p / "__init__.py").is_file()} - {"__init__"}
    assert parts == {n for names in CORE_LAYERS for n in names.split()}


def test_the_core_imports_only_down_its_layers():
    edges = graph(type_checking=True)
    assert upward_imports(edges) == []
    # the check sees an import up a layer
    assert upward_imports({"rq_cli.core.contract.keys": {"rq_cli.core.queue"},
                           "rq_cli.core.queue": {"rq_cli.core.contract.keys"}}) == [
        "rq_cli.core.contract.keys -> rq_cli.core.queue"]


def test_no_import_cycles_even_through_imports_inside_functions():
    edges = graph()
    assert sum(map(len, edges.values())) > 40  # the graph was really read
    assert find_cycle(edges) is None, " -> ".join(find_cycle(edges) or [])


def test_no_import_cycles_even_through_type_checking_imports():
    edges = graph(type_checking=True)
    for module, target in TYPE_ONLY_CORE_EDGES:
        edges[module].discard(target)
    assert find_cycle(edges) is None, " -> ".join(find_cycle(edges) or [])


def command_modules() -> set[str]:
    """The modules the command table's loaders import, read from the source (as mypy and
    the import graph read them)."""
    return {target for target, _ in imports_of(COMMAND_TABLE) if target in MODULES}


def test_the_checker_sees_a_cycle_through_type_checking_and_the_command_table():
    # cli.monitor once imported cli.root inside a function, and cli.root loads cli.inspect
    # (which loads cli.monitor) through the table: the table's edges must be in the graph
    edges = graph()
    assert {"rq_cli.cli.push", "rq_cli.cli.inspect", "rq_cli.cli.dash",
            "rq_cli.cli.server_cmd"} <= command_modules() <= edges[COMMAND_TABLE]
    assert COMMAND_TABLE in edges["rq_cli.cli.root"]
    edges["rq_cli.cli.monitor"].add("rq_cli.cli.root")
    assert find_cycle(edges) is not None
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import x\n")
    assert [a.name for n in runtime_imports(tree, type_checking=True)
            if isinstance(n, ast.Import) for a in n.names] == ["x"]
    # the allowance holds only edges that are type-only: at run time the core has no cycle
    runtime = graph()
    assert not any(target in runtime[module] for module, target in TYPE_ONLY_CORE_EDGES)


def test_no_module_imports_by_name():
    # a module named in a string is an import the graph would not see (the command table
    # once loaded its commands so): every import is a statement
    users = sorted(m for m, path in MODULES.items()
                   if "import_module" in path.read_text() or "__import__(" in path.read_text())
    assert users == []


def test_each_loader_of_the_command_table_is_one_plain_import():
    tree = ast.parse(MODULES[COMMAND_TABLE].read_text())
    loaders = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    for command in COMMANDS:
        node = loaders[command.load.__name__]
        first = node.body[0]
        assert isinstance(first, ast.ImportFrom) and first.level == 1, command.name
        assert isinstance(node.body[1], ast.Return) and len(node.body) == 2, command.name


def command_homes(table_source: str) -> dict[str, set[str]]:
    """Module -> the commands it holds, from the command table's loaders (``load_<name>``
    imports the command from its module)."""
    homes: dict[str, set[str]] = {}
    for node in ast.parse(table_source).body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("load_"):
            first = node.body[0]
            if isinstance(first, ast.ImportFrom) and first.module:
                homes.setdefault(first.module, set()).add(node.name.removeprefix("load_"))
    return homes


def misnamed_homes(homes: dict[str, set[str]]) -> list[str]:
    """Command modules whose name does not say what is inside: one holding one command is
    named after it (``<command>.py``, or ``<command>_cmd.py`` for a group), and a module
    named after a command holds that command alone (a family of commands, such as
    leasing.py's lease, complete, fail and extend, is named after the family)."""
    every = set().union(*homes.values())
    bad = []
    for module, names in sorted(homes.items()):
        name = module.removesuffix("_cmd")
        alone = len(names) == 1
        if (alone and name not in names) or (not alone and name in every):
            bad.append(module)
    return bad


def test_each_command_module_is_named_after_its_command():
    homes = command_homes(MODULES[COMMAND_TABLE].read_text())
    assert {c.name.replace("-", "_") for c in COMMANDS} == set().union(*homes.values())
    assert misnamed_homes(homes) == []
    # the check sees a command in a module of another name, and a second command lodging
    # in a module named after the first
    assert misnamed_homes({"errgroups": {"errors"}, "work": {"work", "cancel"},
                           "leasing": {"lease", "fail"}, "server_cmd": {"server"}}) == \
        ["errgroups", "work"]


@pytest.mark.parametrize("command", COMMANDS, ids=[c.name for c in COMMANDS])
def test_every_command_of_the_table_is_importable(command):
    import typer

    target = command.load()  # a function, or a Typer app for a group
    assert isinstance(target, typer.Typer) or target.__module__ in command_modules()


def test_no_module_imports_another_modules_private_names():
    offences = []
    for module in MODULES:
        for target, names in imports_of(module):
            if target.startswith("rq_cli") and target != module:
                offences += [f"{module}: from {target} import {n}" for n in names
                             if n.startswith("_") and not n.startswith("__")]
    assert offences == []


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("rq_cli.core")))
def test_the_core_imports_no_cli_library(module):
    for target, _ in imports_of(module):
        root = target.split(".")[0]
        assert root not in ("typer", "click", "rich"), (module, target)
        assert not target.startswith(
            ("rq_cli.cli", "rq_cli.output.render", "rq_cli.settings.config")), (module, target)


def test_documented_library_imports_work_and_load_no_cli_library():
    code = ("import sys\n"
            "from rq_cli.core.queue import WorkQueue, lease_many\n"
            "from rq_cli.core.types import ItemRef, NewItem\n"
            "from rq_cli.core.reports import Stats, PeekedItem\n"
            "import rq_cli.core.types as types\n"
            "assert not hasattr(types, 'Stats') and 'Outcome' not in types.__all__\n"
            "assert WorkQueue.__module__ == 'rq_cli.core.queue'\n"
            "assert Stats.__module__ == 'rq_cli.core.reports'\n"
            "import rq_cli.core\n"
            "assert not hasattr(rq_cli.core, 'WorkQueue')  # one import path per name\n"
            "import importlib.util\n"
            "assert importlib.util.find_spec('rq_cli.queue') is None  # no re-export shims\n"
            "assert importlib.util.find_spec('rq_cli.types') is None\n"
            "bad = [m for m in ('typer', 'click', 'rich') if m in sys.modules]\n"
            "print(bad)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_no_module_registers_an_exit_handler_on_import():
    # importing rq_cli (a library) must not change how the interpreter exits: the test
    # servers' clean-up (an atexit handler) lives in tests/servers.py, out of the wheel
    offences = []
    for module, path in MODULES.items():
        for node in ast.parse(path.read_text()).body:
            decorators = getattr(node, "decorator_list", [])
            calls = [node.value] if isinstance(node, ast.Expr) else []
            for expr in [*decorators, *calls]:
                func = expr.func if isinstance(expr, ast.Call) else expr
                if isinstance(func, ast.Attribute) and func.attr == "register" and \
                        isinstance(func.value, ast.Name) and func.value.id == "atexit":
                    offences.append(module)
    assert offences == []


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("rq_cli.worker")))
def test_the_worker_stays_in_rooms_a_person_can_hold(module):
    # the worker was one module of 900 lines; split along its seams, each part stays small
    text = MODULES[module].read_text()
    assert len(text.splitlines()) <= 400, module
    long = [f"{node.name}: {node.end_lineno - node.lineno + 1} lines"
            for node in ast.walk(ast.parse(text))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and (node.end_lineno or 0) - node.lineno + 1 > 60]
    assert long == []


#: Methods that change a mapping, list or set in place.
MUTATORS = {"update", "append", "extend", "setdefault", "add", "insert", "pop", "clear",
            "remove", "discard", "__setitem__"}


def imported_names(tree: ast.Module) -> set[str]:
    """The names a module's top-level imports bind."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def base_name(node: ast.AST) -> str | None:
    """``x`` of ``x.a.b`` or ``x.a[k]``."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def changes_on_import(source: str) -> list[str]:
    """The top-level statements of a module that change something it imported (another
    module's table, a class of another module)."""
    tree = ast.parse(source)
    imported = imported_names(tree)
    found = []
    for node in tree.body:
        targets: list[ast.AST] = []
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            targets = [t for t in targets if isinstance(t, (ast.Attribute, ast.Subscript))]
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and \
                isinstance(node.value.func, ast.Attribute) and node.value.func.attr in MUTATORS:
            targets = [node.value.func.value]
        found += [ast.unparse(node) for t in targets if base_name(t) in imported]
    return found


def test_the_checker_sees_an_import_that_changes_another_module():
    assert changes_on_import("from ..errors import E\nE.NAMES.update({})\n") == \
        ["E.NAMES.update({})"]
    assert changes_on_import("import x\nx.TABLE['a'] = 1\nx.A = 2\n") == \
        ["x.TABLE['a'] = 1", "x.A = 2"]
    assert changes_on_import("T = {}\nT.update({})\nimport x\ny = x.f()\n") == []


def test_no_import_changes_another_modules_table():
    # an import changes nothing outside its module: a mapping a front end needs (the CLI's
    # flags for the engine's parameters) is passed where the error is reported
    offences = {m: found for m, path in MODULES.items()
                if (found := changes_on_import(path.read_text()))}
    assert offences == {}


def test_no_empty_type_checking_block():
    offences = [f"{module}:{node.lineno}" for module, path in MODULES.items()
                for node in ast.walk(ast.parse(path.read_text()))
                if isinstance(node, ast.If) and is_type_checking(node)
                and all(isinstance(b, ast.Pass) for b in node.body)]
    assert offences == []


def named_in_text(text: str) -> tuple[set[str], set[str]]:
    """The ``rq_cli/...`` paths and the dotted ``rq_cli.x.y`` names a text mentions."""
    paths = {m.rstrip(".") for m in re.findall(r"\brq_cli(?:/[\w.]+)+", text)}
    dotted = set(re.findall(r"\brq_cli(?:\.\w+)+", text)) - {p.replace("/", ".")
                                                            for p in paths}
    return {p for p in paths if "*" not in p}, dotted


def resolves(name: str) -> bool:
    """Whether a dotted name is a module of rq_cli or an attribute of one."""
    import importlib

    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        module = ".".join(parts[:i])
        if module in MODULES:
            target: object = importlib.import_module(module)
            for attr in parts[i:]:
                if not hasattr(target, attr):
                    return False
                target = getattr(target, attr)
            return True
    return False


def test_docstrings_comments_and_generated_headers_name_files_that_exist():
    # a file moved (rq_cli/scripts.py -> rq_cli/core/scripting/scripts.py) leaves no stale pointer
    sources = [*PACKAGE.rglob("*.py"), *(PACKAGE / "core" / "scripting" / "lua").glob("*.lua")]
    offences = []
    for path in sources:
        paths, dotted = named_in_text(path.read_text())
        offences += [f"{path.name}: {p}" for p in paths
                     if not (PACKAGE.parent / p).exists()]
        offences += [f"{path.name}: {d}" for d in dotted if not resolves(d)]
    assert offences == []
    assert named_in_text("see rq_cli/keys.py and rq_cli.core.contract.keys.FIXED_KEYS.") == (
        {"rq_cli/keys.py"}, {"rq_cli.core.contract.keys.FIXED_KEYS"})
    assert not resolves("rq_cli.reports") and resolves("rq_cli.core.reports.Stats")


# -- the front ends: cli/, dash/ and web/ are siblings over console/ and ops/ -----------------
def _imports_package(module: str, package: str) -> list[str]:
    """What ``module`` imports from ``package`` (imports under TYPE_CHECKING count too)."""
    return [target for target, _ in imports_of(module, type_checking=True)
            if target == package or target.startswith(package + ".")]


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("rq_cli.dash")))
def test_no_module_of_the_terminal_console_imports_the_command_line_or_the_web_view(module):
    # what the consoles share lives beneath them (rq_cli/console/, rq_cli/ops/, the core)
    assert _imports_package(module, "rq_cli.cli") + _imports_package(module, "rq_cli.web") == []


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("rq_cli.web")))
def test_no_module_of_the_web_view_imports_the_command_line_or_the_terminal_console(module):
    assert _imports_package(module, "rq_cli.cli") + _imports_package(module, "rq_cli.dash") == []


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("rq_cli.console")))
def test_the_console_model_imports_no_front_end_nor_its_libraries(module):
    # beneath both consoles: neither Textual nor Starlette, neither console nor the CLI
    for target, _ in imports_of(module, type_checking=True):
        assert target.split(".")[0] not in ("typer", "click", "rich", "textual", "starlette",
                                            "uvicorn", "jinja2"), (module, target)
        assert not target.startswith(("rq_cli.cli", "rq_cli.dash", "rq_cli.web")), (
            module, target)


def test_the_consoles_share_the_model_beneath_them():
    # both really use it (a check that reads nothing would pass the tests above)
    assert _imports_package("rq_cli.web.pages", "rq_cli.console")
    assert _imports_package("rq_cli.dash.app", "rq_cli.console")
    assert _imports_package("rq_cli.dash.queue_screen", "rq_cli.console")


def test_the_command_line_reaches_the_web_view_only_through_its_entry_point():
    users = sorted(m for m in MODULES if not m.startswith("rq_cli.web")
                   and _imports_package(m, "rq_cli.web"))
    assert users == ["rq_cli.cli.web"]


@pytest.mark.parametrize("module", sorted(m for m in MODULES if not m.startswith("rq_cli.web")))
def test_only_the_web_view_imports_its_stack(module):
    # the web extra's libraries load with `rq-cli web` only
    for target, _ in imports_of(module, type_checking=True):
        assert target.split(".")[0] not in ("starlette", "uvicorn", "jinja2"), (module, target)


def test_the_command_line_reaches_the_terminal_console_only_through_its_entry_point():
    users = sorted(m for m in MODULES if not m.startswith("rq_cli.dash")
                   and _imports_package(m, "rq_cli.dash"))
    assert users == ["rq_cli.cli.dash"]


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("rq_cli.ops")))
def test_the_shared_operations_import_no_front_end(module):
    for target, _ in imports_of(module, type_checking=True):
        assert target.split(".")[0] not in ("typer", "click", "rich", "textual"), target
        assert not target.startswith(("rq_cli.cli", "rq_cli.dash", "rq_cli.web",
                                      "rq_cli.console")), (module, target)


def test_the_front_end_checks_see_an_offence():
    edges = {t for t, _ in imports_of("rq_cli.console.model", type_checking=True)}
    assert "rq_cli.ops.filters" in edges and "rq_cli.ops.polling" in edges
    tree = ast.parse("if TYPE_CHECKING:\n    from ..cli.common import State\n")
    assert [n.module for n in runtime_imports(tree, type_checking=True)
            if isinstance(n, ast.ImportFrom)] == ["cli.common"]


def test_the_consoles_styles_are_tcss_files_that_ship():
    dash = PACKAGE / "dash"
    inline = [p.name for p in dash.glob("*.py")
              if re.search(r"^\s*(DEFAULT_)?CSS\s*(:[^=]*)?=", p.read_text(), re.M)]
    assert inline == []
    named = re.findall(r'"(\w+\.tcss)"', (dash / "app.py").read_text())
    assert sorted(named) == sorted(p.name for p in dash.glob("*.tcss")) != []
    assert '"rq_cli/dash/*.tcss"' in (PACKAGE.parent / "pyproject.toml").read_text()


# -- the worker: on WorkQueue's public API (its package docstring) ---------------------------
#: the script machinery under WorkQueue's public methods
_ENGINE_INSIDE = ("rq_cli.core.scripting.scripts", "rq_cli.core.contract.specs",
                  "rq_cli.core.scripting.calling", "rq_cli.core.operations.base")


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("rq_cli.worker")))
def test_the_worker_reaches_scripts_only_through_the_queues_public_methods(module):
    """No worker module runs a script itself (WorkQueue.call/decoded, the specs): it fails,
    completes and extends items through WorkQueue's methods, as its docstring promises."""
    offences = [target for target, _ in imports_of(module, type_checking=True)
                if target.startswith(_ENGINE_INSIDE)]
    text = MODULES[module].read_text()
    offences += re.findall(r"\.(?:call|decoded|per_batch|ref_args)\(", text)
    assert offences == []
