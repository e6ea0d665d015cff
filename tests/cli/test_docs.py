"""The documentation keeps up with the code.

- Every command and group, found by walking the Click command tree Typer builds, has help
  text; every command's docstring has an example line that runs it (``rq-cli <command>``),
  and ``--help`` shows it.
- The manual (docs/*.md, the site mkdocs.yml builds) has a section ``## rq-cli <command>``
  with an example for every command, and no section for a command that does not exist;
  README.md, the front door, names every command and links into the manual.
- The manual's "Exit codes" table lists exactly the codes of ``rq_cli.errors.ExitCode`` (the
  site's own table is generated from it: tests/cli/test_manual.py).
- CHANGELOG.md follows Keep a Changelog: ``## [Unreleased]`` first, only its subsection names.
- The test command the manual's Development page shows is the one .ci/run runs.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from rq_cli.cli import app
from rq_cli.cli.commands import COMMANDS as TABLE
from rq_cli.errors import ExitCode

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = REPO / "docs"
CHANGELOG = REPO / "CHANGELOG.md"
CI_RUN = REPO / ".ci" / "run"
KEEP_A_CHANGELOG = ("Added", "Changed", "Deprecated", "Removed", "Fixed", "Security")


def walk(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """(path, command) for the root, every group and every command, depth first (through
    Click's public ``list_commands``/``get_command``, as help and completion see them)."""
    yield path, command
    ctx = command.make_context(path[-1] if path else "rq-cli", ["--help"],
                               resilient_parsing=True)
    for name in getattr(command, "list_commands", lambda ctx: [])(ctx):
        sub = command.get_command(ctx, name)
        if not getattr(sub, "hidden", False):
            yield from walk(sub, (*path, name))


TREE = list(walk(typer.main.get_command(app)))
GROUPS = [(path, cmd) for path, cmd in TREE if hasattr(cmd, "commands")]
COMMANDS = [(path, cmd) for path, cmd in TREE if not hasattr(cmd, "commands")]
COMMAND_NAMES = [" ".join(path) for path, _ in COMMANDS]


def test_the_tree_has_every_command() -> None:
    """The walk itself: every command of the table (rq_cli/cli/commands.py), including the
    two groups' subcommands."""
    groups = {"config": {"path", "show"}, "server": {"status", "stop"}}
    top = {c.name for c in TABLE} - set(groups)
    assert len(top) > 15  # the table was really read
    assert set(COMMAND_NAMES) == top | {f"{g} {s}" for g, subs in groups.items() for s in subs}
    assert {" ".join(path) for path, _ in GROUPS} == {"", *groups}


def readme() -> str:
    if not README.exists():
        pytest.fail("README.md is missing")
    return README.read_text(encoding="utf-8")


def manual_pages() -> dict[str, str]:
    """The manual's pages (docs/**/*.md but the design notes), by path under docs/."""
    return {str(p.relative_to(DOCS)): p.read_text(encoding="utf-8")
            for p in sorted(DOCS.rglob("*.md")) if p.name != "DESIGN.md"}


def manual() -> str:
    """Every page of the manual, one after the other."""
    return "\n\n".join(manual_pages().values())


def page(name: str) -> str:
    path = DOCS / name
    assert path.exists(), f"the manual has no page docs/{name}"
    return path.read_text(encoding="utf-8")


def section(text: str, heading: re.Pattern[str]) -> str:
    """The body under the first heading matching ``heading``, up to the next heading of the
    same or a higher level."""
    lines = text.splitlines()
    for n, line in enumerate(lines):
        if heading.fullmatch(line):
            level = len(line) - len(line.lstrip("#"))
            body = []
            for following in lines[n + 1:]:
                marks = len(following) - len(following.lstrip("#"))
                if 0 < marks <= level and following[marks:marks + 1] == " ":
                    break
                body.append(following)
            return "\n".join(body)
    raise AssertionError(f"no heading matching {heading.pattern!r}")


def outside_code(text: str) -> Iterator[str]:
    """The lines of ``text`` that are not inside a fenced code block."""
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield line


def code_lines(text: str) -> list[str]:
    """The lines inside fenced code blocks."""
    inside: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif fenced:
            inside.append(line)
    return inside


def cells(row: str) -> list[str]:
    """A Markdown table row's cells; ``\\|`` is a pipe inside a cell (also inside code)."""
    inner = row.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", inner)]


def tables(text: str) -> list[list[str]]:
    """Each Markdown table in ``text`` (outside code blocks) as its list of row lines."""
    found: list[list[str]] = []
    current: list[str] = []
    for line in [*outside_code(text), ""]:
        if line.lstrip().startswith("|"):
            current.append(line)
        elif current:
            found.append(current)
            current = []
    return found


# -- help text ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("path", "command"), TREE, ids=[" ".join(p) or "rq-cli" for p, _ in TREE])
def test_help_text(path: tuple[str, ...], command: Any) -> None:
    name = " ".join(("rq-cli", *path))
    assert (command.help or "").strip(), f"{name} has no help text (docstring or help=)"
    assert command.get_short_help_str(limit=200).strip(), f"{name}: no one-line summary"
    shown = CliRunner().invoke(app, [*path, "--help"], prog_name="rq-cli")
    assert shown.exit_code == 0, shown.output
    assert shown.stdout.startswith(f"Usage: {name} ")


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=COMMAND_NAMES)
def test_docstring_has_an_example(path: tuple[str, ...], command: Any) -> None:
    """One sentence and an example (STYLE.md 25): a line ``Example: ... rq-cli <command> ...``."""
    name = " ".join(("rq-cli", *path))
    examples = [line.strip() for line in (command.help or "").splitlines()
                if line.strip().startswith("Example")]
    assert examples, f"{name}: the docstring has no 'Example: {name} ...' line"
    assert any(re.search(rf"{re.escape(name)}(?![\w-])", line) for line in examples), (
        f"{name}: no example line runs {name!r}: {examples}")
    shown = CliRunner().invoke(app, [*path, "--help"], prog_name="rq-cli")
    flat = " ".join(shown.stdout.split())  # as --help wraps it
    assert any(" ".join(example.split()) in flat for example in examples), (
        f"{name} --help does not show its example:\n{shown.stdout}")


@pytest.mark.parametrize(("path", "command"), TREE, ids=[" ".join(p) or "rq-cli" for p, _ in TREE])
def test_every_option_and_argument_has_help(path: tuple[str, ...], command: Any) -> None:
    missing = [param.name for param in command.params
               if not getattr(param, "hidden", False) and not (getattr(param, "help", "") or
                                                               "").strip()]
    assert not missing, f"rq-cli {' '.join(path)}: no help for {missing}"


# -- the manual's command sections ------------------------------------------------------------
def command_heading(name: str) -> re.Pattern[str]:
    return re.compile(rf"#{{2,3}} rq-cli {re.escape(name)}(\s.*)?")


@pytest.mark.parametrize("name", COMMAND_NAMES)
def test_manual_has_a_section_per_command(name: str) -> None:
    headings = [(path, line) for path, text in manual_pages().items()
                for line in outside_code(text) if command_heading(name).fullmatch(line)]
    assert headings, f"the manual (docs/) has no '## rq-cli {name}' section"
    assert len(headings) == 1, (
        f"the manual has {len(headings)} 'rq-cli {name}' sections: {headings}")


@pytest.mark.parametrize("name", COMMAND_NAMES)
def test_manual_section_shows_the_command(name: str) -> None:
    (text,) = [t for t in manual_pages().values()
               if any(command_heading(name).fullmatch(line) for line in outside_code(t))]
    body = section(text, command_heading(name))
    runs = [line for line in code_lines(body)
            if re.search(rf"rq-cli( --?\S+( [^-\s]\S*)?)* {re.escape(name)}(\s|$)", line)]
    assert runs, f"the manual's 'rq-cli {name}' section has no example running it"


def test_manual_has_no_section_for_an_unknown_command() -> None:
    for line in outside_code(manual()):
        match = re.fullmatch(r"#{2,3} rq-cli (.+)", line)
        if match:
            words = match.group(1).split()
            assert " ".join(words[:2]) in COMMAND_NAMES or words[0] in COMMAND_NAMES, (
                f"the manual has a section for an unknown command: {line!r}")


def test_readme_names_every_command_and_links_into_the_manual() -> None:
    """The front door: each command by name, the exit codes, the config, links to the pages."""
    text = readme()
    for name in COMMAND_NAMES:
        assert re.search(rf"rq-cli {re.escape(name)}(?![\w-])", text), f"README.md lacks {name}"
    for code in ExitCode:
        assert re.search(rf"(?<![\w.]){int(code)}(?![\w.])", text), f"README.md lacks exit {code}"
    linked = set(re.findall(r"\]\(docs/([\w/.-]+\.md)", text))
    assert linked <= set(manual_pages()), linked - set(manual_pages())
    assert {"getting-started.md", "reference/commands.md", "reference/exit-codes.md",
            "configuration.md"} <= linked


def test_readme_is_a_front_door() -> None:
    assert len(readme().splitlines()) <= 250


# -- every example's command line ---------------------------------------------------------------
_RUNS = re.compile(r"(?:^|[|;&(]\s*|\$\(\s*|\bexec\s+|=\S*\s+)rq-cli\s+([^|;&)#]*)")
_GLOBAL_FLAGS = {"--prefix", "--json", "--no-config", "--version", "-h", "--help"}


def option_names() -> dict[tuple[str, ...], set[str]]:
    return {path: {name for param in cmd.params
                   for name in (*getattr(param, "opts", ()), *getattr(param, "secondary_opts", ()))}
            for path, cmd in TREE}


def example_runs() -> list[tuple[str, int, list[str]]]:
    """(file, line number, the words after ``rq-cli``) of each rq-cli run in a code block of
    the README or the manual (after ``$ ``, in a pipe, a ``$(...)``, a cron or unit line)."""
    found = []
    for name, text in [("README.md", readme()), *manual_pages().items()]:
        fenced = False
        for number, line in enumerate(text.splitlines(), 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
            elif fenced:
                for match in _RUNS.finditer(line.strip().removeprefix("$ ")):
                    try:
                        found.append((name, number, shlex.split(match.group(1))))
                    except ValueError:  # (a quote that the shell line continues)
                        continue
    return found


def test_every_example_runs_a_real_command_with_real_options() -> None:
    """Each ``rq-cli ...`` in the README's and the manual's examples names a command that
    exists and only options it (or rq-cli itself) has: a renamed flag fails here."""
    options = option_names()
    runs = example_runs()
    assert len(runs) > 60
    wrong = []
    for name, number, words in runs:
        path: tuple[str, ...] = ()
        i = 0
        while i < len(words) and words[i].startswith("-"):  # global options first
            flag = words[i].split("=")[0]
            if flag not in options[()]:
                wrong.append(f"{name}:{number}: rq-cli has no {flag}")
            i += 1 if flag in _GLOBAL_FLAGS or "=" in words[i] else 2
        while i < len(words) and (*path, words[i]) in options:
            path, i = (*path, words[i]), i + 1
        if not path:
            if i < len(words):
                wrong.append(f"{name}:{number}: no command {words[i]!r}")
            continue
        for word in words[i:]:
            if word == "--":  # (work's command follows)
                break
            flag = word.split("=")[0]
            if (flag.startswith("--") or re.fullmatch(r"-[a-zA-Z]", flag)) and \
                    flag not in options[path] | options[()]:
                wrong.append(f"{name}:{number}: rq-cli {' '.join(path)} has no {flag}")
    assert not wrong, "\n".join(wrong)


def test_readme_links_into_the_manual_resolve() -> None:
    """Each link of the README to a page of the manual names a page and a heading it has."""
    pages = manual_pages()
    for target, anchor in re.findall(r"\]\(docs/([\w/.-]+\.md)(?:#([\w-]+))?\)", readme()):
        assert target in pages, f"README.md links to docs/{target}: no such page"
        if anchor:
            slugs = {re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", line.lstrip("#")
                                                   .replace("`", "")).strip().lower())
                     for line in outside_code(pages[target]) if line.startswith("#")}
            assert anchor in slugs, f"README.md links to docs/{target}#{anchor}: no such heading"


# -- exit codes -----------------------------------------------------------------------------------
def exit_code_table() -> list[list[str]]:
    body = section(page("reference/exit-codes.md"), re.compile(r"#{2,4} When each code is used"))
    found = tables(body)
    assert found, "the manual's 'Exit codes' page has no table of when each code is used"
    return [cells(row) for row in found[0]]


def test_manual_lists_every_exit_code() -> None:
    rows = exit_code_table()
    documented = {}
    for row in rows[2:]:  # after the header and the delimiter row
        match = re.fullmatch(r"`?(\d+)`?", row[0])
        assert match, f"an Exit codes row does not start with a code: {row}"
        documented[int(match.group(1))] = row[1] if len(row) > 1 else ""
    codes = {int(code) for code in ExitCode}
    assert sorted(codes - set(documented)) == [], "exit codes missing from the manual"
    assert sorted(set(documented) - codes) == [], "the manual lists codes ExitCode lacks"
    assert all(meaning.strip() for meaning in documented.values())


@pytest.mark.parametrize("name", ["README.md", *manual_pages()])
def test_tables_are_well_formed(name: str) -> None:
    text = readme() if name == "README.md" else page(name)
    for table in tables(text):
        width = len(cells(table[0]))
        for row in table[1:]:
            assert len(cells(row)) == width, f"{name}: row with {len(cells(row))} cells, " \
                                             f"not {width}: {row!r}"


def test_root_help_lists_every_exit_code() -> None:
    shown = " ".join(CliRunner().invoke(app, ["--help"], prog_name="rq-cli").stdout.split())
    listed = re.search(r"Exit codes: (.*?)\.(\s|$)", shown)
    assert listed, shown
    numbers = {int(n) for n in re.findall(r"(?<![\w.])(\d+) ", listed.group(1) + " ")}
    assert numbers == {int(code) for code in ExitCode}


# -- CHANGELOG ------------------------------------------------------------------------------------
def test_changelog_follows_keep_a_changelog() -> None:
    text = CHANGELOG.read_text(encoding="utf-8")
    lines = list(outside_code(text))
    releases = [line for line in lines if line.startswith("## ")]
    assert releases, "CHANGELOG.md has no release sections"
    assert releases[0] == "## [Unreleased]", "CHANGELOG.md must open with '## [Unreleased]'"
    for line in releases[1:]:
        assert re.fullmatch(r"## \[\d+\.\d+\.\d+[^\]]*\] - \d{4}-\d{2}-\d{2}( \[YANKED\])?",
                            line), f"not a Keep a Changelog release heading: {line!r}"
    release = None
    seen: set[str] = set()
    for line in lines:
        if line.startswith("## "):
            release, seen = line, set()
        elif line.startswith("### "):
            kind = line[4:].strip()
            assert release is not None, f"{line!r} comes before any release"
            assert kind in KEEP_A_CHANGELOG, (
                f"{line!r} under {release!r}: only {', '.join(KEEP_A_CHANGELOG)} are allowed")
            assert kind not in seen, f"{line!r} appears twice under {release!r}"
            seen.add(kind)
        elif line.startswith("#### ") or (line.startswith("# ") and release is not None):
            pytest.fail(f"unexpected heading in CHANGELOG.md: {line!r}")


# -- the test command -----------------------------------------------------------------------------
def ci_test_command() -> str:
    script = CI_RUN.read_text(encoding="utf-8")
    match = re.search(r"^TEST_COMMAND=\(([^)]*)\)", script, re.M)
    assert match, ".ci/run defines no TEST_COMMAND=(...)"
    return " ".join(shlex.split(match.group(1), comments=True))


def test_manual_shows_the_ci_test_command() -> None:
    command = ci_test_command()
    assert command == "python -m pytest"
    development = page("development.md")
    assert command in [" ".join(line.split()) for line in code_lines(development)], (
        f"docs/development.md shows no code line '{command}', the command .ci/run runs")
