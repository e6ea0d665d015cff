"""MkDocs hooks (mkdocs.yml ``hooks:``): the generated parts of the manual's pages.

A page holds a marker line ``<!-- generated: NAME -->`` and the build puts there what
scripts/manual.py generates from the code: ``commands`` (every command's --help, from the
Typer app), ``exit-codes`` (the ``ExitCode`` enum), ``json-fields`` (the schemas in
rq_cli/schemas/). A marker with an unknown name fails the build.
"""

from __future__ import annotations

import re
from typing import Any

import manual  # scripts/manual.py: MkDocs puts this hook's folder on sys.path while loading it

GENERATORS = {
    "commands": manual.commands_markdown,
    "exit-codes": manual.exit_codes_markdown,
    "json-fields": manual.json_fields_markdown,
}
MARKER = re.compile(r"^<!-- generated: ([\w-]+) -->$", re.M)

def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise ValueError(f"{page.file.src_path}: unknown generated part {name!r}")
        return GENERATORS[name]()

    return MARKER.sub(fill, markdown)
