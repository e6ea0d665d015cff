"""The Lua scripts: each one's named arguments and reply fields, and its source.

``SPECS`` declares, per script, the names of its own arguments (after the common head:
prefix, now, layout) and of its reply's fields. Python passes arguments by name
(:meth:`ScriptSpec.argv`) and reads replies by name (:meth:`ScriptSpec.decode`); the Lua
side reads the same names, generated into the script's header as ``A_<NAME>`` (and
``REST``, the index in ARGV of the first repeated argument). Adding an argument is a change
to the spec and to the script that uses it, nowhere else.

Each script's source is its own file in ``lua/`` after a header cut to what it uses
(:func:`source`): the ``_common.lua``/``_fair.lua`` definitions a script names are declared
in it (``--@uses`` lines, checked against what it names: :func:`declared_uses`) and are
included with what they name in turn; the generated names (``K_<NAME>`` of
``keys.FIXED_KEYS``, ``A_<NAME>``, the codes of ``codes.py``) when the script names them.
tests/test_contract.py fails when a script reads a name it did not get. The server time per
call is the budget (docs/DESIGN.md section 1): a prelude that built every helper and key name on
every call cost more than a hot script's own work.

This module imports neither Typer nor rich.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from functools import cache
from typing import NamedTuple

from ..codes import lua_constants
from ..contract.ages import TIME_DIGITS as ID_TIME_DIGITS
from ..contract.ages import V7_PATTERN
from ..contract.batches import lua_blocks as batch_blocks
from ..contract.fields import lua_blocks as field_blocks
from ..contract.keys import (
    DEAD_ITEM,
    DEDUP_WINDOW_FIELD,
    DEFAULT_TENANT,
    DRAGONFLY_FLAGS,
    FAIR_PENDING_FIELD,
    FAIR_TURN_FIELD,
    FIXED_KEYS,
    HISTORY_FIELDS,
    ITEM,
    ITEM_KEY_HELPERS,
    LIMIT_FIELDS,
    OLD_SERVER_CHECK,
    TENANT_LIMIT,
    TENANT_QUEUE,
)
from ..contract.limits import (
    DEDUP_PRUNE,
    EXPIRED_BATCH,
    EXPIRED_REACH,
    FRESH_ID_LEN,
    GENERATION_SAMPLE,
    HISTORY_HOURS,
    HISTORY_MINUTES,
    JOURNAL_GRACE_MS,
    LEASE_LOOKAHEAD,
    LEASED_PAGE,
    PUSH_STAMP_SLACK_MS,
    SUSPECTS_KEPT,
    TENANT_AGE_SAMPLE,
    UNLIST_SHORT,
    UNPACK_CHUNK,
    WAKE_TOKENS,
    WAKE_TTL_MS,
)
from ..contract.specs import HEAD, SPECS, ScriptSpec
from .libfold import fold, folded_refs
from .scriptparts import (
    TYPE_CHECK_NAMES,
    blocks,
    code_lines,
    definition,
    dependency_order,
    fixed_keys,
    is_function,
    names,
    type_check,
    uses,
    with_limits,
)

LUA_DIR = os.path.join(os.path.dirname(__file__), "lua")  # (cheaper than importlib.resources)

_LAZY = "--@lazy"
#: A script's declaration of the ``_common.lua``/``_fair.lua`` definitions it names:
#: ``--@uses name name ...`` lines (checked: see :func:`declared_uses`).
_USES = re.compile(r"^--@uses\b(.*)$", re.M)


def _key_blocks() -> list[tuple[str, str]]:
    """``PREFIX`` and a ``K_<NAME>`` per fixed key (KEYS[1] is ``P:queue``)."""
    out = [("PREFIX", "local PREFIX = ARGV[1]")]
    for k in FIXED_KEYS:
        value = "KEYS[1]" if k.name == "queue" else f"PREFIX .. ':{k.name}'"
        out.append((f"K_{k.name.upper()}", f"local K_{k.name.upper()} = {value}"))
    return out


#: The item key families whose helper is --@lazy (off the hot paths).
_LAZY_FAMILIES = frozenset({DEAD_ITEM})


def _item_key_lua() -> str:
    """The per-item key helpers ``item_key(id)``, ... of keys.ITEM_KEY_HELPERS, as Lua
    definitions read with ``_common.lua`` (so that they are included, and --@lazy, as its
    own definitions are)."""
    lines = ["-- P:<family>:<id>: generated from rq_cli/core/contract/keys.py ITEM_KEY_HELPERS"]
    for family, helper in ITEM_KEY_HELPERS.items():
        lazy = " " + _LAZY if family in _LAZY_FAMILIES else ""
        lines.append(f"local function {helper}(id) return PREFIX .. ':{family}:' .. id end{lazy}")
    return "\n".join(lines)


def _generated_blocks() -> list[tuple[str, str]]:
    """The bookkeeping lists of keys.FIXED_KEYS (the type table is made per script)."""
    def table(names: Sequence[str]) -> str:
        return "{" + ", ".join(f"K_{n.upper()}" for n in names) + "}"

    whole = [k.name for k in FIXED_KEYS if k.role in ("meta", "other")]

    def drops(rare: bool) -> str:
        return "{" + ", ".join(
            f"{{'{'HDEL' if k.type == 'hash' else 'ZREM'}', K_{k.name.upper()}}}"
            for k in FIXED_KEYS if k.role == "meta" and k.rare == rare) + "}"

    return [# {command, key} that drops an id's entry, for the usual and the rare meta keys
            ("META_USUAL", f"local META_USUAL = {drops(False)}"),
            ("META_RARE", f"local META_RARE = {drops(True)}"),
            ("UNLINKED_WHOLE", f"local UNLINKED_WHOLE = {table(whole)}"),
            ("F_DEDUP_WINDOW", f"local F_DEDUP_WINDOW = '{DEDUP_WINDOW_FIELD}'"),
            ("F_FAIR_TURN", f"local F_FAIR_TURN = '{FAIR_TURN_FIELD}'"),
            ("F_FAIR_PENDING", f"local F_FAIR_PENDING = '{FAIR_PENDING_FIELD}'"),
            # the fields of P:limits (keys.LIMIT_FIELDS)
            *((f"F_{f.upper()}", f"local F_{f.upper()} = '{f}'") for f in LIMIT_FIELDS),
            ("F_TENANT_LIMIT", f"local F_TENANT_LIMIT = '{TENANT_LIMIT}'"),
            # P:item: (push writes many item keys at once)
            ("ITEM_KEY_PREFIX", f"local ITEM_KEY_PREFIX = PREFIX .. ':{ITEM}:'"),
            # the fixed key `name` (keys.FIXED_KEYS), and item id's data key, of the queue with
            # prefix `prefix` (requeue-dead into another queue)
            ("key_in", "local function key_in(prefix, name) return prefix .. ':' .. name end"),
            ("item_key_in", "local function item_key_in(prefix, id) "
                            f"return prefix .. ':{ITEM}:' .. id end"),
            # fair queues (lua/_fair.lua)
            ("TENANT_KEY_PREFIX", f"local TENANT_KEY_PREFIX = PREFIX .. ':{TENANT_QUEUE}:'"),
            ("DEFAULT_TENANT", f"local DEFAULT_TENANT = '{DEFAULT_TENANT}'"),
            ("WAKE_TOKENS", f"local WAKE_TOKENS = {WAKE_TOKENS}"),
            ("WAKE_TTL_MS", f"local WAKE_TTL_MS = {WAKE_TTL_MS}"),
            # stats: ids at the tail of processing looked at for the other generation's keys
            ("GENERATION_SAMPLE", f"local GENERATION_SAMPLE = {GENERATION_SAMPLE}"),
            # stats: ids of processing per page looked at for leases P:leases does not count
            ("LEASED_PAGE", f"local LEASED_PAGE = {LEASED_PAGE}"),
            # stats: tenants of the ring looked at for the oldest pending age
            ("TENANT_AGE_SAMPLE", f"local TENANT_AGE_SAMPLE = {TENANT_AGE_SAMPLE}"),
            # limits.py: multi-value commands' chunk, lease's look-ahead, clean's sightings kept
            ("UNPACK_CHUNK", f"local UNPACK_CHUNK = {UNPACK_CHUNK}"),
            ("LEASE_LOOKAHEAD", f"local LEASE_LOOKAHEAD = {LEASE_LOOKAHEAD}"),
            ("UNLIST_SHORT", f"local UNLIST_SHORT = {UNLIST_SHORT}"),
            ("SUSPECTS_KEPT", f"local SUSPECTS_KEPT = {SUSPECTS_KEPT}"),
            ("DEDUP_PRUNE", f"local DEDUP_PRUNE = {DEDUP_PRUNE}"),
            # clean: expired items dead-lettered per call, and how far in line it looks
            ("EXPIRED_BATCH", f"local EXPIRED_BATCH = {EXPIRED_BATCH}"),
            ("EXPIRED_REACH", f"local EXPIRED_REACH = {EXPIRED_REACH}"),
            ("JOURNAL_GRACE_MS", f"local JOURNAL_GRACE_MS = {JOURNAL_GRACE_MS}"),
            # history snapshots (keys.HISTORY_FIELDS, limits.HISTORY_MINUTES/HOURS)
            ("HISTORY_FIELDS", "local HISTORY_FIELDS = {" +
             ", ".join(f"'{f}'" for f in HISTORY_FIELDS) + "}"),
            ("HISTORY_MINUTES", f"local HISTORY_MINUTES = {HISTORY_MINUTES}"),
            ("HISTORY_HOURS", f"local HISTORY_HOURS = {HISTORY_HOURS}"),
            # bulk push as transactions (push_commit.lua)
            ("FRESH_ID_LEN", f"local FRESH_ID_LEN = {FRESH_ID_LEN}"),
            ("PUSH_STAMP_SLACK_MS", f"local PUSH_STAMP_SLACK_MS = {PUSH_STAMP_SLACK_MS}"),
            # ids that carry their push time (ages.py, lua/_ages.lua)
            ("V7_PATTERN", f"local V7_PATTERN = '{V7_PATTERN}'"),
            ("ID_TIME_DIGITS", f"local ID_TIME_DIGITS = {ID_TIME_DIGITS}"),
            # the hashes of the per-item fields each reply carries (fields.py)
            *field_blocks(frozenset(k.name for k in FIXED_KEYS if k.rare)),
            # states, outcome codes, dead-letter reasons, counters, push flags and clean's
            # sighting prefixes (codes.py)
            *lua_constants(),
            # batches: the record's fields and key helpers (batches.py)
            *batch_blocks()]


def _arg_blocks(spec: ScriptSpec) -> list[tuple[str, str]]:
    out = [(f"A_{a.upper()}", f"local A_{a.upper()} = ARGV[{i}]")
           for i, a in enumerate(spec.args, start=len(HEAD) + 1)]
    out.append(("REST", f"local REST = {len(HEAD) + len(spec.args) + 1}"))
    return out


class _Block(NamedTuple):
    name: str
    text: str  #: as written, with each --@lazy name made ``L.<name>``
    plain: str  #: as written (the library makes every definition at load: no ``L``)
    names: frozenset[str]  #: the names it uses (comments left out)
    lazy: bool


@cache
def _common() -> tuple[_Block, ...]:
    """The definitions of ``lua/_ages.lua``, ``lua/_fair.lua``, ``lua/_common.lua``,
    ``lua/_history.lua`` and ``lua/_batch.lua`` (in that order: each one's use those before,
    except where a definition names a later one: :func:`scriptparts.dependency_order`), read and
    prepared once per process."""
    with open(os.path.join(LUA_DIR, "_fair.lua")) as fair, \
            open(os.path.join(LUA_DIR, "_common.lua")) as common:
        found = blocks(_item_key_lua() + "\n" + fair.read() + "\n" + common.read()
                       + "\n" + _read("_history.lua") + "\n" + _read("_batch.lua"))
    found += blocks(_read("_limits.lua"))  # (fleet-wide limits: docs/DESIGN.md section 9)
    found = dependency_order([*blocks(_read("_ages.lua")), *found])  # (_ages.lua first)
    lazy = frozenset(n for n, t in found if _LAZY in definition(t))
    return tuple(_Block(n, _lazy_refs(t, lazy), t, frozenset(names(t)), n in lazy)
                 for n, t in found)


def _read(name: str) -> str:
    with open(os.path.join(LUA_DIR, name)) as f:
        return f.read()


def declared_uses(name: str, body: str) -> set[str]:
    """The definitions of ``_common.lua`` and ``_fair.lua`` (and the type check's
    ``wrong_type`` and ``QUIET``) that script ``name`` declares with ``--@uses``: exactly
    those its body names, or ValueError. So what a script gets is written in it, and a
    script that names a helper it did not declare, or declares one it no longer names,
    fails to build (tests/test_contract.py builds every script)."""
    declared = {n for line in _USES.findall(body) for n in line.replace(",", " ").split()}
    known = {b.name for b in _common()} | TYPE_CHECK_NAMES
    named = names(body) & known
    if declared != named:
        raise ValueError(
            f"lua/{name}.lua: its --@uses lines must list the definitions of _common.lua it "
            f"names: missing {sorted(named - declared)}, not named {sorted(declared - named)}")
    return declared


def _lazy_refs(text: str, lazy: frozenset[str]) -> str:
    """``text`` with each use of a --@lazy name made ``L.<name>``."""
    return _lazy_pattern(lazy).sub(r"L.\1", text).replace("local function L.", "function L.")


@cache
def _lazy_pattern(lazy: frozenset[str]) -> re.Pattern[str]:
    """Any of the names in ``lazy``, not after "." or ":" (a field or method)."""
    return re.compile(r"(?<![\w.:])(" + "|".join(sorted(lazy)) + r")\b")


@cache
def source(name: str) -> str:
    """The Lua source of script ``name``: the definitions it uses, then ``lua/<name>.lua``.

    Definitions come from the fixed keys (``K_<NAME>``), the script's spec (``A_<NAME>``,
    ``REST``), the generated bookkeeping lists and type check, and ``lua/_common.lua``; one
    is included when the script, or an included definition, names it. A ``_common.lua``
    definition marked ``--@lazy`` becomes ``L.<name>``, made on the first call that uses
    it (through L's ``__index``), so a call on the hot path does not pay for closures it
    never calls."""
    spec = SPECS[name]
    common = _common()
    with open(os.path.join(LUA_DIR, f"{name}.lua")) as f:
        body = f.read()
    head = [*_key_blocks(), *_arg_blocks(spec), *_generated_blocks()]
    wanted = _wanted(name, body, head)
    keys = fixed_keys(wanted)
    lazy = [b for b in common if b.name in wanted and b.lazy]
    parts = [DRAGONFLY_FLAGS,  # the first line, for Dragonfly (keys.DRAGONFLY_FLAGS)
             f"-- {name}.lua with the definitions it uses: generated by "
             f"rq_cli/core/scripting/scripts.py from keys.FIXED_KEYS, SPECS[{name!r}] and "
             "lua/_common.lua",
             OLD_SERVER_CHECK]  # before any command: a server older than Redis 6 is refused
    parts += [text for n, text in head if n in wanted]
    checked = bool(wanted & TYPE_CHECK_NAMES)
    decls, check = type_check(keys, "LIMITED" in wanted)
    if checked:  # (wrong_type() after the definitions: it may call limits_read())
        parts.append(decls)
    if lazy:
        parts.append("-- the --@lazy definitions, made on first use\nlocal L = {}")
    parts += [b.text for b in common if b.name in wanted and not b.lazy]
    if lazy:
        parts.append("setmetatable(L, {__index = function(t, k)\n  setmetatable(t, nil)")
        parts += [b.text for b in lazy]
        parts.append("  return rawget(t, k)\nend})")
    if checked:
        parts.append(_lazy_refs(check, frozenset(b.name for b in common if b.lazy)))
    parts.append(_lazy_refs(body, frozenset(b.name for b in common if b.lazy)))
    return "\n".join(parts) + "\n"


# -- Redis Functions: the hot scripts as one library --------------------------------------

#: The scripts a worker runs once per item (or per batch). On a server with Redis Functions
#: (Redis >= 7.0, Valkey) they run as the functions of one library (:func:`library`), whose
#: helpers and key names are made once, not on every call; elsewhere as EVALSHA of
#: :func:`source`.
HOT = ("lease", "complete", "fail", "extend")

#: Prefix of the library's name and of its functions' names (then a hash of the library).
FUNCTION_PREFIX = "rqcli_"


class Library(NamedTuple):
    """The hot scripts as a Redis Functions library (``FUNCTION LOAD``)."""

    name: str  #: rqcli_<hash of the code>: a changed library loads beside the old one
    code: str
    functions: dict[str, str]  #: script name -> function name (``FCALL``)


def _bare(block: str, name: str) -> str:
    """A ``local NAME = ...`` block as an assignment to an upvalue declared before."""
    return re.sub(rf"^local {name}\b", name, block, count=1, flags=re.M)


@cache
def library() -> Library:
    """The scripts of :data:`HOT` as one library: the same definitions and bodies as
    :func:`source`, arranged so that a call pays only for its own work.

    - Every definition (helper functions, tables, constants) is made once, when the library
      loads; nothing is ``--@lazy``.
    - The values a call brings (KEYS, ARGV, NOW, the layout, the tenant of KEYS[2]) are
      upvalues that ``begin`` sets at the start of each call; the key names and tables made
      from the prefix are made again only when the prefix differs from the last call's.
    - Each script becomes ``local function run_<name>(keys, args)``: ``begin``, its named
      arguments and type check (as in :func:`source`), then its body unchanged."""
    head = [*_key_blocks(), *_generated_blocks()]
    # Each definition, in order, is one of: made per call (it reads KEYS or ARGV, or such a
    # value), per prefix (it reads PREFIX, or such a name), or once (a function, a constant).
    per_call: dict[str, str] = {}
    per_prefix: dict[str, str] = {}
    constants: list[str] = []
    functions: dict[str, str] = {}
    for n, t in [*head, *((b.name, b.plain) for b in _common())]:
        if n in ("PREFIX", "K_QUEUE"):  # (set first thing in begin)
            continue
        used = names(t) - {n}
        if is_function(t):
            functions[n] = re.sub(rf"^local function {n}\b", f"function {n}", t, count=1,
                                  flags=re.M)
        elif used & {"ARGV", "KEYS", "K_QUEUE", *per_call}:
            per_call[n] = _bare(t, n)
        elif used & {"PREFIX", *per_prefix}:
            per_prefix[n] = _bare(t, n)
        else:
            constants.append(t)
    begin = ["-- Set the values of this call (and, for a new prefix, the names made from it).",
             "local function begin(keys, args)",
             "  KEYS, ARGV = keys, args",
             "  K_QUEUE = keys[1]",
             "  QUIET, LIMITED = false, false",
             "  ABSENT = {}",
             "  if args[1] ~= PREFIX then",
             "    PREFIX = args[1]",
             *("    " + line for t in per_prefix.values() for line in code_lines(t)),
             "  end",
             *("  " + line for t in per_call.values() for line in code_lines(t)),
             "end"]
    declared = ["KEYS", "ARGV", "PREFIX", "K_QUEUE", "QUIET", "ABSENT", "LIMITED",
                *per_prefix, *per_call]
    # (the functions declared first, then defined: helpers that call each other in a cycle,
    # as batch_move -> batch_settle -> batch_release -> dead_letter -> batch_move, each see
    # the others, which the --@lazy table gives source()'s scripts)
    folded, constants, folded_names = fold(constants)
    body_parts = [f"local {', '.join(declared)}", f"local {', '.join(functions)}", *constants,
                  "\n".join(begin), *functions.values()]
    runs: list[str] = []
    for name in HOT:
        with open(os.path.join(LUA_DIR, f"{name}.lua")) as f:
            body = f.read()
        # (as in source(), less its declarations: here QUIET and LIMITED are shared, and
        # begin resets them)
        wanted = _wanted(name, body, head)
        _, check = type_check(fixed_keys(wanted), "LIMITED" in wanted)
        args = "\n".join(t for _, t in _arg_blocks(SPECS[name]))
        runs.append(f"local function run_{name}(keys, args)\n  begin(keys, args)\n"
                    f"{args}\n{check}\n{body}\nend")
    code = folded + folded_refs("\n".join([*body_parts, *runs]) + "\n", folded_names)
    digest = hashlib.sha1(code.encode()).hexdigest()[:16]
    lib = f"{FUNCTION_PREFIX}{digest}"
    functions_of = {name: f"{lib}_{name}" for name in HOT}
    registers = [f"redis.register_function('{functions_of[n]}', run_{n})" for n in HOT]
    header = (f"#!lua name={lib}\n-- rq-cli's hot scripts ({', '.join(HOT)}) as functions: "
              f"generated by rq_cli/core/scripting/scripts.py library() from lua/_fair.lua, "
              f"lua/_common.lua and lua/<name>.lua\n")
    return Library(lib, header + code + "\n".join(registers) + "\n", functions_of)


def _wanted(name: str, body: str, head: Sequence[tuple[str, str]]) -> set[str]:
    """The definitions script ``name`` (``body``) gets of ``head`` and ``_common()``: those
    it names or declares (--@uses), what they name, and what its type check calls."""
    common = {b.name: b.names for b in _common()}
    return with_limits(uses(body, head, common, declared_uses(name, body)), head, common)
