"""What the manual generates from the code, shared by the site and the man pages.

- :func:`command` -- the Click command tree Typer builds from the rq-cli app, every command
  loaded (the app's table in rq_cli/cli/commands.py loads commands on first use; the manual
  needs them all); :func:`pages` reads each command's help, usage, arguments and options
  from it, exactly as ``--help`` prints them. The site's command reference
  (:func:`commands_markdown`) and the man pages (scripts/gen_man.py) are both made from it.
  (Not mkdocs-click: Typer >= 0.2x builds on its own copy of Click, ``typer._click``, which
  mkdocs-click does not recognize as Click: it would list no option.)
- :func:`exit_codes_markdown` -- the table of ``rq_cli.errors.ExitCode``, each code's meaning
  taken from the comment on its line there.
- :func:`json_fields_markdown` -- the fields of every shipped schema (rq_cli/schemas/).

scripts/mkdocs_hooks.py puts the last two into the pages at their markers; scripts/gen_man.py
writes the man pages (when the wheel is built: scripts/hatch_build.py); tests/cli/test_manual.py
checks both.
"""

from __future__ import annotations

import io
import json
import re
import sys
import tokenize
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # this checkout's rq_cli, whatever else is installed
    sys.path.insert(0, str(REPO))

import typer  # noqa: E402

from rq_cli.cli import app  # noqa: E402
from rq_cli.errors import ExitCode  # noqa: E402

SCHEMAS = REPO / "rq_cli" / "schemas"
ERRORS_SOURCE = REPO / "rq_cli" / "errors.py"
PROG = "rq-cli"


def _load_all(group: Any, name: str) -> Any:
    """``group`` with every subcommand built and registered in ``group.commands`` (what
    tools that read ``commands`` see), depth first."""
    ctx = group.make_context(name, ["--help"], resilient_parsing=True)
    for sub_name in group.list_commands(ctx):
        sub = group.get_command(ctx, sub_name)
        if sub is None or getattr(sub, "hidden", False):
            continue
        group.commands[sub_name] = sub
        if hasattr(sub, "list_commands"):
            _load_all(sub, sub_name)
    return group


def command() -> Any:
    """The root Click group of rq-cli with every command loaded."""
    return _load_all(typer.main.get_command(app), PROG)


def walk(cmd: Any | None = None,
         path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """(path, command) for the root, each group and each command, in help order."""
    cmd = command() if cmd is None else cmd
    yield path, cmd
    for name, sub in getattr(cmd, "commands", {}).items():
        if not getattr(sub, "hidden", False):
            yield from walk(sub, (*path, name))


class Page(NamedTuple):
    """One command (or group) as its --help shows it."""

    path: tuple[str, ...]  # () for rq-cli itself
    help: str  # the docstring, paragraphs separated by blank lines
    summary: str  # the one-line summary
    usage: str  # "rq-cli push [OPTIONS] {QUEUE} [DATA]..."
    arguments: list[tuple[str, str]]  # (NAME, help)
    options: list[tuple[str, str]]  # ("--id ID", help)
    subcommands: list[tuple[str, str]]  # (name, summary)

    @property
    def name(self) -> str:
        return " ".join((PROG, *self.path))


def pages() -> list[Page]:
    """Every command and group, root first, in help order."""
    found: list[Page] = []
    contexts: dict[tuple[str, ...], Any] = {}
    for path, cmd in walk():
        parent = contexts.get(path[:-1]) if path else None
        ctx = cmd.make_context(path[-1] if path else PROG, ["--help"], resilient_parsing=True,
                               parent=parent)
        contexts[path] = ctx
        arguments, options = [], []
        for param in cmd.get_params(ctx):
            record = param.get_help_record(ctx)
            if getattr(param, "hidden", False) or record is None:
                continue
            if getattr(param, "param_type_name", "") == "argument":
                arguments.append(((param.name or "").upper(), record[1]))
            else:
                options.append(record)
        subs = [(name, sub.get_short_help_str(limit=300))
                for name, sub in getattr(cmd, "commands", {}).items()
                if not getattr(sub, "hidden", False)]
        usage = " ".join([ctx.command_path, *cmd.collect_usage_pieces(ctx)])
        found.append(Page(path, (cmd.help or "").strip(), cmd.get_short_help_str(limit=300),
                          usage, arguments, options, subs))
    return found


def commands_markdown() -> str:
    """The command reference: a section per command, as --help shows it."""
    out: list[str] = []
    for page in pages():
        out += [f"## {page.name}", ""]
        out += [_md_text(page.help), "", "```", page.usage, "```", ""]
        if page.arguments:
            out += ["| Argument | Meaning |", "|---|---|"]
            out += [f"| `{n}` | {_md_cell(h)} |" for n, h in page.arguments]
            out.append("")
        if page.options:
            out += ["| Option | Meaning |", "|---|---|"]
            out += [f"| `{o}` | {_md_cell(h)} |" for o, h in page.options]
            out.append("")
        if page.subcommands:
            out += [f"- [`{page.name} {n}`](#{_slug(f'{page.name} {n}')}): {_md_cell(h)}"
                    for n, h in page.subcommands]
            out.append("")
    return "\n".join(out)


def _slug(heading: str) -> str:
    return re.sub(r"[^\w-]", "", heading.lower().replace(" ", "-"))


def _md_text(text: str) -> str:
    """A docstring as Markdown: its ``Example:`` lines as code."""
    lines = []
    for line in text.splitlines():
        if line.strip().startswith("Example:"):
            lines.append("Example: `" + line.strip().removeprefix("Example:").strip() + "`")
        else:
            lines.append(line.replace("<", "&lt;"))
    return "\n".join(lines)


# -- exit codes -----------------------------------------------------------------------------------
def exit_code_meanings() -> dict[int, str]:
    """Each ExitCode's meaning: the comment on its line in rq_cli/errors.py (or its name)."""
    meanings: dict[int, str] = {}
    source = ERRORS_SOURCE.read_text(encoding="utf-8")
    comments = {tok.start[0]: tok.string.lstrip("#").strip()
                for tok in tokenize.generate_tokens(io.StringIO(source).readline)
                if tok.type == tokenize.COMMENT}
    lines = source.splitlines()
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        for code in ExitCode:
            if stripped.startswith(f"{code.name} = {int(code)}"):
                meanings[int(code)] = comments.get(number, code.name.lower().replace("_", " "))
    for code in ExitCode:
        meanings.setdefault(int(code), code.name.lower().replace("_", " "))
    return meanings


def exit_codes_markdown() -> str:
    meanings = exit_code_meanings()
    rows = ["| Code | Name | Meaning |", "|---|---|---|"]
    for code in sorted(ExitCode, key=int):
        meaning = _md_cell(meanings[int(code)].replace("``", "`"))
        rows.append(f"| `{int(code)}` | `{code.name}` | {meaning} |")
    return "\n".join(rows) + "\n"


# -- JSON fields ----------------------------------------------------------------------------------
def schemas() -> dict[str, dict[str, Any]]:
    """Schema name (the file's, without .schema.json) -> the schema, in name order (as
    rq_cli.output.shapes.schema reads it: with the per-item fields of
    rq_cli/core/contract/fields.py)."""
    from rq_cli.output.shapes import schema

    return {name: schema(name) for name in sorted(
        p.name.removesuffix(".schema.json") for p in SCHEMAS.glob("*.schema.json"))}


def _md_cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _type(prop: dict[str, Any]) -> str:
    if "const" in prop:
        return f"`{json.dumps(prop['const'])}`"
    if "enum" in prop:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in prop["enum"])
    kind = prop.get("type")
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind == "array" and isinstance(prop.get("items"), dict) and prop["items"].get("type"):
        return f"array of {prop['items']['type']}"
    if kind:
        return str(kind)
    if "oneOf" in prop or "anyOf" in prop:
        return "one of several"
    return "any JSON"


def _shapes(schema: dict[str, Any]) -> Iterator[tuple[str | None, dict[str, Any]]]:
    """(kind of line, its object schema) for each kind of line a schema allows."""
    if "properties" in schema:
        yield None, schema
    for ref in schema.get("anyOf", []) + schema.get("oneOf", []):
        target = ref.get("$ref", "")
        if target.startswith("#/$defs/"):
            name = target.removeprefix("#/$defs/")
            yield name, schema["$defs"][name]


def json_fields_markdown() -> str:
    out: list[str] = []
    for name, schema in schemas().items():
        out += [f"### {name}", "", f"`{schema.get('$id', '')}`: {schema.get('description', '')}",
                ""]
        for kind, shape in _shapes(schema):
            if kind is not None:
                out += [f"**{kind}**" + (f": {shape['description']}"
                                         if shape.get("description") else ""), ""]
            required = set(shape.get("required", []))
            out += ["| Field | Type | Always | Meaning |", "|---|---|---|---|"]
            for field, prop in shape.get("properties", {}).items():
                out.append(f"| `{field}` | {_type(prop)} | {'yes' if field in required else ''}"
                           f" | {_md_cell(prop.get('description', ''))} |")
            out.append("")
    return "\n".join(out)
