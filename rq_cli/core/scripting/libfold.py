"""The Functions library's one-line constants folded into one table (``RQ.NAME``):
Lua allows a function 200 locals, and the library (core/scripting/scripts.py ``library()``) defines
every hot script's constants, helpers and names in its main chunk, which together pass
that. Used by ``library()`` only: a script of its own (``source()``) keeps its locals."""

from __future__ import annotations

import re

#: The table the library keeps its one-line constants in (:func:`fold`).
_FOLD_TABLE = "RQ"
#: A one-line constant: ``local NAME = <expression>`` (after any comment lines).
_ONE_LINE_CONSTANT = re.compile(r"(?:\s*--[^\n]*\n)*\s*local ([A-Z][A-Z0-9_]*) = ([^\n]+)\s*")
#: What a constant's name is never replaced in: string literals and comments.
_NOT_CODE = re.compile(r"'(?:\\.|[^'\\\n])*'|\"(?:\\.|[^\"\\\n])*\"|--[^\n]*")


def fold(constants: list[str]) -> tuple[str, list[str], frozenset[str]]:
    """The library's one-line constants as fields of one table (``RQ.NAME``), and the other
    definitions: Lua allows a function (the library's main chunk) 200 locals, and the
    library's definitions of every hot script together pass that. Returns the table's
    definition, what stays a local, and the names folded (:func:`folded_refs` reads them
    from the table)."""
    fields: list[tuple[str, str]] = []
    kept: list[str] = []
    for t in constants:
        m = _ONE_LINE_CONSTANT.fullmatch(t)
        if m:
            fields.append((m.group(1), m.group(2)))
        else:
            kept.append(t)
    names = frozenset(n for n, _ in fields)
    lines = [f"local {_FOLD_TABLE} = {{}}",
             *(f"{_FOLD_TABLE}.{n} = {folded_refs(v, names)}" for n, v in fields)]
    return "\n".join(lines) + "\n", kept, names


def folded_refs(code: str, names: frozenset[str]) -> str:
    """``code`` with each folded constant's name read from its table (not in a string or a
    comment, and not a field of something else)."""
    if not names:
        return code
    name = re.compile(r"(?<![\w.])(" + "|".join(sorted(names, key=len, reverse=True)) +
                      r")(?!\w)")
    out, last = [], 0
    for m in _NOT_CODE.finditer(code):
        out.append(name.sub(rf"{_FOLD_TABLE}.\1", code[last:m.start()]))
        out.append(m.group(0))
        last = m.end()
    out.append(name.sub(rf"{_FOLD_TABLE}.\1", code[last:]))
    return "".join(out)
