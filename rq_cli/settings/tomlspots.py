"""Where a key is in TOML text (tomllib keeps no positions), and how to name it, for the
config's error messages. No Typer, no rich."""

from __future__ import annotations

import re
from typing import Any


def table_name(table: tuple[str, ...]) -> str:
    return "the top level" if not table else "[" + ".".join(quote(t) for t in table) + "]"


def quote(part: str) -> str:
    return part if re.fullmatch(r"[A-Za-z0-9_-]+", part) else '"' + part.replace('"', '\\"') + '"'


def toml_type(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a float", str: "a string",
            list: "an array", dict: "a table"}.get(type(value), type(value).__name__)


class Locator:
    """Finds the line of ``key`` inside ``[table]`` in TOML text, for error messages.

    tomllib keeps no positions, so this re-reads the text line by line: table headers and
    ``key =`` / ``dotted.key =`` assignments. Good enough for error messages; when it cannot
    tell (a key inside a multi-line value, an inline table) it falls back to the table header.
    """

    _HEADER = r"\s*\[(?!\[)\s*(.+?)\s*\]\s*(#.*)?$"
    _KEY = (r"""\s*((?:"[^"]*"|'[^']*'|[A-Za-z0-9_-]+)"""
            r"""(?:\s*\.\s*(?:"[^"]*"|'[^']*'|[A-Za-z0-9_-]+))*)\s*=""")

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()

    def __call__(self, table: tuple[str, ...], key: str | None) -> int | None:
        current: tuple[str, ...] = ()
        header_line = None
        for number, line in enumerate(self.lines, 1):
            header = re.match(self._HEADER, line)
            if header:
                current = split_dotted(header.group(1))
                if current == table:
                    header_line = number
                    if key is None:
                        return number
                continue
            assign = re.match(self._KEY, line)
            if assign and key is not None:
                path = current + split_dotted(assign.group(1))
                if path == (*table, key):
                    return number
        return header_line


def split_dotted(text: str) -> tuple[str, ...]:
    parts = re.findall(r""""([^"]*)"|'([^']*)'|([A-Za-z0-9_-]+)""", text)
    return tuple(a or b or c for a, b, c in parts)
