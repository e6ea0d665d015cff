"""The manual's generated parts keep up with the code, and the man pages ship and render.

- The man pages, rq-cli(1) and a page per command and group, are generated from the app
  when the wheel is built (scripts/hatch_build.py runs scripts/gen_man.py): a wheel built
  here holds every page under share/man/man1/ (and the schemas, the Lua scripts), the
  sdist holds what makes them, and ``man -l`` renders the pages without a warning (skipped
  without ``man``).
- The site's generated parts (scripts/manual.py, put into the pages by
  scripts/mkdocs_hooks.py): the command reference names every command and every option, the
  exit codes are those of ``ExitCode``, the JSON fields every schema's; every marker in docs/
  names a part the hook knows. (.ci/run builds the site with ``mkdocs build --strict``.)
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from types import ModuleType

import pytest
import typer

from rq_cli.cli import app
from rq_cli.errors import ExitCode

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"


def load(name: str) -> ModuleType:
    sys.path.insert(0, str(REPO / "scripts"))  # (gen_man imports manual)
    try:
        spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(REPO / "scripts"))


gen_man = load("gen_man")
manual = gen_man.manual
PAGES = manual.pages()
NAMES = [page.name for page in PAGES]


def test_the_pages_cover_every_command() -> None:
    """The tree the manual reads is the app's, every lazily loaded command included."""
    root = typer.main.get_command(app)
    ctx = root.make_context("rq-cli", ["--help"], resilient_parsing=True)
    top = [f"rq-cli {name}" for name in root.list_commands(ctx)]
    assert NAMES[0] == "rq-cli" and len(top) > 15
    assert set(top) <= set(NAMES)
    assert {"rq-cli config path", "rq-cli config show", "rq-cli server status",
            "rq-cli server stop"} <= set(NAMES)
    push = PAGES[NAMES.index("rq-cli push")]
    assert [a for a, _ in push.arguments] == ["QUEUE", "DATA"]
    assert any(o.startswith("--id-from-data") for o, _ in push.options)


# -- man pages ------------------------------------------------------------------------------------
def page_file(name: str) -> str:
    """``rq-cli config show`` -> ``rq-cli-config-show.1``."""
    return "-".join(name.split()) + ".1"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel and the sdist of this checkout, built as a release builds them (hatchling,
    its build hook included), with this virtualenv's packages."""
    pytest.importorskip("hatchling")
    out = tmp_path_factory.mktemp("dist")
    for kind in ("wheel", "sdist"):
        done = subprocess.run([sys.executable, "-c", "import sys, hatchling.build as b; "
                               f"print(b.build_{kind}(sys.argv[1]))", str(out)],
                              cwd=REPO, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
    return out


def test_a_built_wheel_ships_every_man_page_under_share_man(built: Path) -> None:
    """Every page the generator makes now, with its bytes, where ``man`` looks under an
    installation prefix; the package's data files beside them."""
    with zipfile.ZipFile(next(built.glob("rqcli-*.whl"))) as wheel:
        names = wheel.namelist()
        shipped = {n.rsplit("/", 1)[1]: n for n in names if ".data/data/share/man/" in n}
        fresh = gen_man.generate()
        assert sorted(shipped) == sorted(fresh) == sorted(page_file(n) for n in NAMES)
        for name, text in fresh.items():
            assert wheel.read(shipped[name]).decode() == text, name
    assert all("/share/man/man1/" in n for n in shipped.values())
    # the schemas, the scripts and the styles are package data the wheel carries too
    package = Path(REPO / "rq_cli")
    for pattern in ("schemas/*.schema.json", "core/scripting/lua/*.lua", "dash/*.tcss"):
        files = sorted(package.glob(pattern))
        assert files and all(f"rq_cli/{f.relative_to(package)}" in names for f in files)


def test_the_sdist_holds_what_makes_the_man_pages(built: Path) -> None:
    """A wheel built from the sdist (as ``python -m build`` does) runs the same hook."""
    with tarfile.open(next(built.glob("rqcli-*.tar.gz"))) as sdist:
        members = {m.split("/", 1)[1] for m in sdist.getnames() if "/" in m}
    assert {"scripts/hatch_build.py", "scripts/gen_man.py", "scripts/manual.py"} <= members
    assert not any(m.startswith("man/") for m in members)  # (no stale copy)


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The man pages, written by the generator as the build hook runs it."""
    out = tmp_path_factory.mktemp("man")
    gen_man.write(out)
    return out


@pytest.fixture(scope="module")
def man() -> str:
    found = shutil.which("man")
    if found is None:
        pytest.skip("no man here (apt-get install man-db groff-base)")
    return found


def render(man: str, page: Path) -> str:
    done = subprocess.run([man, "--warnings", "-l", str(page)], capture_output=True, text=True,
                          env={"MANWIDTH": "100", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", f"{page.name}: {done.stderr}"
    return done.stdout


def test_man_renders_rq_cli_1(man: str, pages: Path) -> None:
    text = render(man, pages / "rq-cli.1")
    flat = " ".join(text.split())
    for heading in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "COMMANDS", "EXIT STATUS",
                    "SEE ALSO"):
        assert re.search(rf"^{heading}$", text, re.M), heading
    assert "rq-cli - A reliable work queue" in flat
    exits = text.split("EXIT STATUS", 1)[1].split("SEE ALSO", 1)[0]
    assert {int(n) for n in re.findall(r"^ {7}(\d+)\b", exits, re.M)} == {int(c) for c in ExitCode}
    assert "rq-cli-push(1)" in flat and "rq-cli-config-show(1)" in flat


@pytest.mark.parametrize("name", [n for n in NAMES if n != "rq-cli"])
def test_man_renders_each_command(man: str, pages: Path, name: str) -> None:
    page = PAGES[NAMES.index(name)]
    flat = " ".join(render(man, pages / page_file(name)).split())
    assert f"SYNOPSIS {page.usage}" in flat
    for option, _ in page.options:
        assert option in flat, option


# -- the site's generated parts -------------------------------------------------------------------
def test_command_reference_has_every_command_and_option() -> None:
    text = manual.commands_markdown()
    for page in PAGES:
        assert f"\n## {page.name}\n" in f"\n{text}", page.name
        for option, _ in page.options:
            assert f"| `{option}` |" in text, (page.name, option)


def test_exit_code_table_is_the_enum() -> None:
    rows = [line for line in manual.exit_codes_markdown().splitlines()
            if re.match(r"\| `\d+` \|", line)]
    codes = [int(row.split("`")[1]) for row in rows]
    assert codes == sorted(int(c) for c in ExitCode)
    assert all(not row.rstrip("| ").endswith("|") for row in rows)  # a meaning in each


def test_json_fields_cover_every_schema() -> None:
    text = manual.json_fields_markdown()
    for path in (REPO / "rq_cli" / "schemas").glob("*.schema.json"):
        assert f"### {path.name.removesuffix('.schema.json')}\n" in text, path.name
    assert "| `lease_expires_at` |" in text and "| `attempt` | integer | yes |" in text


def test_every_marker_names_a_generated_part() -> None:
    hooks = load("mkdocs_hooks")
    used = set()
    for page in DOCS.rglob("*.md"):
        for name in hooks.MARKER.findall(page.read_text(encoding="utf-8")):
            assert name in hooks.GENERATORS, f"{page}: unknown part {name!r}"
            used.add(name)
    assert used == set(hooks.GENERATORS)
