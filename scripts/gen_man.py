#!/usr/bin/env python3
"""Generate the man pages from the rq-cli app: rq-cli(1) and one per command.

    python scripts/gen_man.py              # write man/*.1 (ignored by git: a look from a checkout)
    python scripts/gen_man.py --out DIR    # write them into DIR

``rq-cli.1`` is the tool (its global options, the commands, the exit codes of
``rq_cli.errors.ExitCode``); ``rq-cli-push.1``, ``rq-cli-config-show.1``, ... are the
commands, each what ``rq-cli COMMAND --help`` prints (scripts/manual.py reads the same tree
for the site's command reference). The wheel's build hook (scripts/hatch_build.py) runs this
at build time and ships the pages under ``share/man/man1/``, where ``man`` finds them in a
virtualenv or pipx install; no copy is committed. The pages carry no date or version, so the
same app always gives the same bytes; tests/cli/test_manual.py renders them and checks that
a built wheel holds them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import manual

MAN = manual.REPO / "man"
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
    out = [f'.\\" Generated from the {manual.PROG} app by scripts/gen_man.py when the wheel is '
           "built: do not edit.",
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


def write(directory: Path) -> int:
    """Write every page into ``directory`` (made if missing), removing pages of commands
    that are gone; the number written."""
    directory.mkdir(parents=True, exist_ok=True)
    fresh = generate()
    for path in directory.glob("*.1"):
        if path.name not in fresh:
            path.unlink()
    for name, text in fresh.items():
        (directory / name).write_text(text, encoding="utf-8")
    return len(fresh)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=MAN, metavar="DIR",
                        help="where to write the pages (default: man/ of the checkout)")
    args = parser.parse_args()
    count = write(args.out)
    print(f"wrote {count} pages to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
