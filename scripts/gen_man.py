#!/usr/bin/env python3
"""Generate the man pages in ``man/`` from the rq-cli app: rq-cli(1) and one per command.

    python scripts/gen_man.py           # (re)write man/*.1
    python scripts/gen_man.py --check   # exit 1 if a committed page is out of date

``rq-cli.1`` is the tool (its global options, the commands, the exit codes of
``rq_cli.errors.ExitCode``); ``rq-cli-push.1``, ``rq-cli-config-show.1``, ... are the
commands, each what ``rq-cli COMMAND --help`` prints (scripts/manual.py reads the same tree
for the site's command reference). pyproject.toml ships them in the wheel under
``share/man/man1/``, where ``man`` finds them in a virtualenv or pipx install. The pages carry
no date or version, so the same app always gives the same bytes;
tests/cli/test_manual.py checks the committed pages against a fresh run.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import manual

MAN = manual.REPO / "man"
REGENERATE = "python scripts/gen_man.py"
MANUAL = ("The manual (docs/ of the source, built with mkdocs) explains what these options "
          "act on: concepts, workers, fair and sharded queues, configuration, deployments, "
          "guarantees.")


def esc(text: str) -> str:
    """Text for roff: backslashes and hyphens escaped, no line starting as a request."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join("\\&" + line if line.startswith((".", "'")) else line
                     for line in text.splitlines())


def paragraphs(text: str) -> list[str]:
    """A help text as roff paragraphs (blank lines separate them; ``Example:`` lines become
    indented examples)."""
    out: list[str] = []
    for block in text.split("\n\n"):
        block = block.strip()
        if not block:
            continue
        if block.startswith("Example:"):
            out += [".PP", "Example:", ".RS 4", ".EX", esc(block.removeprefix("Example:").strip()),
                    ".EE", ".RE"]
        else:
            out += [".PP", esc(" ".join(block.split()))]
    return out


def items(rows: list[tuple[str, str]]) -> list[str]:
    out: list[str] = []
    for term, text in rows:
        out += [".TP", f"\\fB{esc(term)}\\fR", esc(" ".join(text.split()))]
    return out


def file_name(page: manual.Page) -> str:
    return "-".join((manual.PROG, *page.path)) + ".1"


def render(page: manual.Page, pages: list[manual.Page]) -> str:
    title = "-".join((manual.PROG, *page.path))
    out = [f'.\\" Generated from the {manual.PROG} app by scripts/gen_man.py: do not edit.',
           f'.\\" Regenerate with: {REGENERATE}',
           f'.TH "{title.upper()}" "1" "" "{manual.PROG}" "{manual.PROG} Manual"',
           ".SH NAME", f"{esc(title)} \\- {esc(page.summary)}",
           ".SH SYNOPSIS", f"\\fB{esc(page.usage)}\\fR",
           ".SH DESCRIPTION", *paragraphs(page.help)]
    if page.arguments:
        out += [".SH ARGUMENTS", *items(page.arguments)]
    if page.options:
        out += [".SH OPTIONS", *items(page.options)]
    if page.subcommands:
        out += [".SH COMMANDS",
                *items([(f"{page.name} {name}", f"{summary} See {title}-{name}(1).")
                        for name, summary in page.subcommands])]
    if not page.path:
        meanings = manual.exit_code_meanings()
        out += [".SH EXIT STATUS",
                *items([(str(int(code)), meanings[int(code)].replace("``", "\""))
                        for code in sorted(manual.ExitCode, key=int)])]
    else:
        out += [".SH EXIT STATUS", f"See \\fB{manual.PROG}\\fR(1)."]
    see = sorted({f"{file_name(p)[:-2]}(1)" for p in pages
                  if p.path != page.path and (not page.path or p.path == page.path[:-1]
                                              or p.path[:-1] == page.path)})
    if page.path:
        see = sorted({f"{manual.PROG}(1)", *see})
    out += [".SH SEE ALSO", esc(", ".join(see)) + ".",
            ".PP", esc(MANUAL)]
    return "\n".join(out) + "\n"


def generate() -> dict[str, str]:
    """File name -> content, for rq-cli itself and every command and group."""
    pages = manual.pages()
    return {file_name(page): render(page, pages) for page in pages}


def check(directory: Path) -> list[str]:
    """Messages for the pages of ``directory`` that differ from a fresh generation."""
    problems = []
    fresh = generate()
    for name, text in fresh.items():
        path = directory / name
        if not path.exists():
            problems.append(f"{path}: missing (run {REGENERATE})")
        elif path.read_text(encoding="utf-8") != text:
            diff = difflib.unified_diff(path.read_text(encoding="utf-8").splitlines(),
                                        text.splitlines(), str(path), "fresh", lineterm="", n=1)
            shown = "\n".join(list(diff)[:20])
            problems.append(f"{path}: out of date (run {REGENERATE})\n{shown}")
    for path in sorted(directory.glob("*.1")):
        if path.name not in fresh:
            problems.append(f"{path}: no such command any more (run {REGENERATE})")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check man/, write nothing")
    args = parser.parse_args()
    if args.check:
        problems = check(MAN)
        for problem in problems:
            print(problem, file=sys.stderr)
        return 1 if problems else 0
    MAN.mkdir(exist_ok=True)
    fresh = generate()
    for path in MAN.glob("*.1"):
        if path.name not in fresh:
            path.unlink()
    for name, text in fresh.items():
        (MAN / name).write_text(text, encoding="utf-8")
    print(f"wrote {len(fresh)} pages to {MAN}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
