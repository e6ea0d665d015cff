"""The parts of a script that do not come from lua/: a Lua file's top-level definitions
(:func:`blocks`), the names they use and the order they must come in
(:func:`dependency_order`), what a script gets of them (:func:`uses`), and the generated
type check each writing script calls first (:func:`type_check`, on the fixed keys it
uses: :func:`fixed_keys`). core/scripting/scripts.py puts a script (``source()``) and the Functions
library (``library()``) together from these.

This module imports neither Typer nor rich.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ..contract.keys import FIXED_KEYS

#: A top-level definition's line: ``local NAME`` or ``local function NAME`` at column 0.
DEFINES = re.compile(r"^local (?:function )?([A-Za-z_][A-Za-z0-9_]*)")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_COMMENT = re.compile(r"--.*$", re.M)
#: The names the type check defines (:func:`type_check`): a script names them as it names
#: a ``_common.lua`` definition (``--@uses``).
TYPE_CHECK_NAMES = frozenset({"wrong_type", "QUIET", "ABSENT", "LIMITED"})


def blocks(text: str) -> list[tuple[str, str]]:
    """Top-level definitions of a Lua file, in order: (name, text) for each ``local NAME``
    or ``local function NAME`` at column 0 with the lines up to the next one (the comment
    lines just above a definition go with it)."""
    found: list[tuple[str, list[str]]] = []
    comments: list[str] = []
    for line in text.splitlines():
        m = DEFINES.match(line)
        if m:
            found.append((m.group(1), [*comments, line]))
            comments = []
        elif not line.strip() or line.startswith("--"):
            comments.append(line)
        elif found:
            found[-1][1].extend([*comments, line])
            comments = []
    return [(name, "\n".join(lines)) for name, lines in found]


def names(text: str) -> set[str]:
    return set(_NAME.findall(_COMMENT.sub("", text)))


def dependency_order(defined: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``defined`` (blocks) in their order, except that each comes after those it names (a Lua
    ``local`` is seen only by what follows it: _common.lua's helpers call _batch.lua's
    batch_move, which uses _common.lua's call_all)."""
    by_name = dict(defined)
    out: list[tuple[str, str]] = []
    placed: set[str] = set()

    def place(name: str, text: str) -> None:
        if name in placed:
            return
        placed.add(name)
        for dep in sorted(names(text) & by_name.keys() - {name},
                          key=[n for n, _ in defined].index):
            place(dep, by_name[dep])
        out.append((name, text))

    for name, text in defined:
        place(name, text)
    return out


def uses(body: str, head: Sequence[tuple[str, str]], common: Mapping[str, frozenset[str]],
         declared: set[str]) -> set[str]:
    """The definitions a script gets: the generated ones of ``head`` (``K_<NAME>``,
    ``A_<NAME>``, the codes: named by the spec) that ``body`` names, the ``_common.lua``
    ones it ``declared`` (--@uses; ``common``: each one's name -> the names it uses), and
    what those name in turn."""
    deps: dict[str, set[str] | frozenset[str]] = {n: names(t) for n, t in head}
    deps.update(common)
    known = set(deps) | TYPE_CHECK_NAMES
    wanted: set[str] = set()
    todo = [*(names(body) & {n for n, _ in head}), *declared]
    while todo:
        n = todo.pop()
        if n not in wanted:
            wanted.add(n)
            todo.extend(deps.get(n, set()) & known)
    return wanted


def with_limits(wanted: set[str], head: Sequence[tuple[str, str]],
                common: Mapping[str, frozenset[str]]) -> set[str]:
    """``wanted``, with what the type check of a script naming ``LIMITED`` calls."""
    return wanted | uses("", head, common, {"limits_read"}) if "LIMITED" in wanted else wanted


def type_check(keys: Sequence[str], limited: bool = False) -> tuple[str, str]:
    """``QUIET`` and ``wrong_type()`` for the fixed keys a script uses (``K_<NAME>``): their
    declarations, and the function (in a script that reads the limits, placed after the
    definitions it calls).

    wrong_type() returns an error reply naming the first of them that holds another type,
    or nil. A rare key (keys.FixedKey.rare) is absent from a busy queue: one EXISTS over the
    rare ones sets QUIET when none exists, and then spares their TYPE checks (and the script
    its reads of them). A script that names ``LIMITED`` (``limited``) gets the queue's limits
    there (``limits_read()``: a table, or false), read only when a rare key exists: P:limits
    alone does not make it un-QUIET, and its HMGET, before any write, stops a script whose
    P:limits has another type; so a quiet queue without limits pays nothing (one more key
    in its EXISTS), one with other rare keys one HMGET, and a limited one for its limits
    only. (Naming P:limits in the EXISTS more times than there are other rare keys would
    tell both from its count, but a call's arguments cost more than that HMGET saves.)
    ``P:freed`` (:data:`UNCHECKED`) is neither counted nor checked: no script reads it, and
    it is written with ``pcall`` (lua/_limits.lua)."""
    by_name = {f"K_{k.name.upper()}": k for k in FIXED_KEYS}
    keys = [n for n in keys if n not in UNCHECKED]

    def flat(rare: bool) -> str:
        return ", ".join(f"{n}, '{by_name[n].type}'" for n in keys if by_name[n].rare == rare)

    rare = ", ".join(n for n in keys if by_name[n].rare)
    quiet = f"redis.call('EXISTS', {rare}) == 0" if rare else "true"
    decls = ("-- True when none of this script's rare keys exists (set by wrong_type()).\n"
             "local QUIET = false\n"
             "-- The keys wrong_type() found absent, when not QUIET (batch_move: no "
             "P:item_batch).\nlocal ABSENT = {}")
    if limited:  # (K_LIMITS is rare: FIXED_KEYS)
        decls += ("\n-- The queue's limits (limits_read(): P:limits exists), else false (set "
                  "by wrong_type()).\nlocal LIMITED = false")
        quiet = (f"false\n  local rare = redis.call('EXISTS', {rare})\n"
                 "  LIMITED = rare > 0 and limits_read()\n"
                 "  QUIET = rare == (LIMITED and 1 or 0)")
    return decls, f"""-- Writing scripts call this first (one stopped by WRONGTYPE half-way
-- would leave its earlier writes behind): an error reply naming the first key of the
-- wrong type, or nil.
local function wrong_type()
  QUIET = {quiet}
  local checks = {{{flat(False)}}}
  if not QUIET then
    for _, v in ipairs({{{flat(True)}}}) do checks[#checks + 1] = v end
  end
  for i = 1, #checks, 2 do
    local t = redis.call('TYPE', checks[i])['ok']
    if t == 'none' then
      ABSENT[checks[i]] = true
    elseif t ~= checks[i + 1] then
      return redis.error_reply('WRONGTYPE key ' .. checks[i] .. ' holds a ' .. t .. ', not a ' ..
        checks[i + 1] .. ': something other than this queue uses the prefix; nothing was changed')
    end
  end
  return nil
end"""


#: Fixed keys no type check counts or checks (:func:`type_check`).
UNCHECKED = ("K_FREED",)


def fixed_keys(wanted: set[str]) -> list[str]:
    """The ``K_<NAME>`` of the fixed keys in ``wanted``, in keys.FIXED_KEYS order: those of
    the type check (less the history's where ``record_history`` brings them: it checks them
    itself, once a minute, and skips a foreign one; lua/_history.lua)."""
    skip = {"K_HISTORY", "K_HISTORY_HOURLY"} if "record_history" in wanted else set()
    return [f"K_{k.name.upper()}" for k in FIXED_KEYS
            if f"K_{k.name.upper()}" in wanted and f"K_{k.name.upper()}" not in skip]


def code_lines(block: str) -> list[str]:
    """The lines of ``block`` that are not blank or only a comment."""
    return [line for line in block.splitlines()
            if line.strip() and not line.lstrip().startswith("--")]


def is_function(block: str) -> bool:
    return definition(block).startswith("local function ")


def definition(block: str) -> str:
    """The ``local [function] NAME`` line of a block."""
    return next(line for line in block.splitlines() if DEFINES.match(line))
