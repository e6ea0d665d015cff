"""The contract between the Lua scripts and Python is written once, in Python (issue 20):
no Lua file spells a key suffix, an outcome code or a sighting prefix; the scripts read the
generated names."""

from __future__ import annotations

import os
import re

import rq_cli
from rq_cli.core.contract import fields, keys, specs
from rq_cli.core.scripting import scripts

LUA_FILES = sorted(f for f in os.listdir(scripts.LUA_DIR) if f.endswith(".lua"))
#: Lua string literals ('...' or "..."), comments left out
_STRING = re.compile(r"'([^'\n]*)'|\"([^\"\n]*)\"")


def _literals(name: str) -> list[str]:
    with open(os.path.join(scripts.LUA_DIR, name)) as f:
        code = re.sub(r"--.*$", "", f.read(), flags=re.M)
    return [a or b for a, b in _STRING.findall(code)]


def test_no_lua_file_spells_a_key_suffix() -> None:
    families = {*keys.NAME_FAMILIES, *keys.BATCH_FAMILIES}
    bad = []
    for name in LUA_FILES:
        for lit in _literals(name):
            parts = lit.split(":")
            if len(parts) > 1 and (families & set(parts) or any(
                    p in keys.FIXED_NAMES for p in parts[1:])):
                bad.append((name, lit))
    assert not bad, f"Lua files spell key suffixes (generate them from keys.py): {bad}"


def test_key_in_names_a_fixed_key() -> None:
    for name in LUA_FILES:
        with open(os.path.join(scripts.LUA_DIR, name)) as f:
            for used in re.findall(r"key_in\([^,]+,\s*'([^']*)'\)", f.read()):
                assert used in keys.FIXED_NAMES, (name, used)


def test_generated_item_key_helpers_match_keys() -> None:
    """The Lua helpers and ``Keys`` name the same keys."""
    k = keys.Keys("p{x}")
    src = scripts.source("purge")  # uses every per-item helper
    for family, helper in keys.ITEM_KEY_HELPERS.items():
        assert f"{helper}(id) return PREFIX .. ':{family}:' .. id end" in src
        assert getattr(k, family)("7") == f"p{{x}}:{family}:7"
    assert "local ITEM_KEY_PREFIX = PREFIX .. ':item:'" in scripts.source("push")


def test_no_lua_file_spells_an_outcome_code_or_sighting_prefix() -> None:
    from rq_cli.core import codes

    forbidden = {*codes.OUTCOME_CODES.values(), *codes.SIGHTINGS.values()}
    bad = [(name, lit) for name in LUA_FILES for lit in _literals(name) if lit in forbidden]
    assert not bad, f"Lua files spell outcome codes or sighting prefixes (codes.py): {bad}"
    with open(os.path.join(scripts.LUA_DIR, "push.lua")) as f:
        push = re.sub(r"--.*$", "", f.read(), flags=re.M)
    # push's flags come from codes.PUSH_FLAGS
    assert not re.search(r"flags\[[^\]]*\]\s*=\s*'|string\.rep\('", push)


def test_codes_are_one_table_each() -> None:
    from rq_cli.core import codes
    from rq_cli.core.pushing import bulk

    assert set(codes.OUTCOME_CODES) == set(codes.Outcome)
    for script, outs in codes.SCRIPT_OUTCOMES.items():
        # a script never replies with two outcomes of one letter
        assert len(codes.outcomes(script)) == len(outs), script
        assert all(isinstance(o, codes.Outcome) for o in codes.outcomes(script).values())
        for o in outs:
            assert f"O_{o.name}" in scripts.source(script) or script == "complete", (script, o)
    assert len(set(codes.PUSH_FLAGS.values())) == len(codes.PUSH_FLAGS)
    assert codes.PUSH_FLAGS["added"] == bulk.ADDED
    assert set(bulk.REASONS.values()) == set(codes.PUSH_FLAGS) - {"added"}
    assert {len(p) for p in codes.SIGHTINGS.values()} == {2}  # (clean.lua reads two)


# -- each word said once: states, outcomes, dead-letter reasons, counters (core/codes.py) ----
def vocabulary() -> set[str]:
    from rq_cli.core import codes

    return {w.value for kind in (codes.ItemState, codes.Outcome, codes.DeadReason,
                                 codes.Counter) for w in kind}


def test_no_lua_file_spells_a_state_outcome_reason_or_counter() -> None:
    words = vocabulary()
    assert {"pending", "already_dead", "max_attempts", "manual", "pushed"} <= words
    bad = [(name, lit) for name in LUA_FILES for lit in _literals(name) if lit in words]
    assert not bad, f"Lua files spell words of codes.py (use S_/O_/R_/C_ names): {bad}"


def test_the_vocabulary_is_generated_into_the_scripts_that_name_it() -> None:
    from rq_cli.core import codes

    # (push_commit: push.lua dead-letters too since batches, push --after-ok)
    item, lease, push = (scripts.source(n) for n in ("item", "lease", "push_commit"))
    assert "local S_DEAD = 'dead'" in item and "local S_PENDING = 'pending'" in item
    assert "local R_EXPIRED = 'expired'" in lease and "local C_LEASED = 'leased'" in lease
    assert "local C_PUSHED = 'pushed'" in push and "local S_DEAD =" not in push
    assert f"local F_FAIR_PENDING = '{keys.FAIR_PENDING_FIELD}'" in scripts.source("stats")
    assert keys.COUNTER_FIELDS == codes.COUNTERS == tuple(c.value for c in codes.Counter)
    assert codes.DEAD_REASONS == ("expired", "max_attempts", "cancelled", "failed", "manual",
                                  "after_failed")
    # a word is its value in text too (JSON lines, f-strings), on every supported Python
    assert f"{codes.Outcome.LOST}" == str(codes.Outcome.LOST) == "lost"
    assert codes.Outcome.COMPLETED.ok and not codes.Outcome.CONFLICT.ok


#: Python strings equal to a word of the vocabulary that are not the word: names of fields,
#: keys, options and columns that happen to be spelled the same (module -> word -> count).
#: Dict keys, subscripts and the first argument of ``Column``/``get``/``getattr`` are field
#: names too, and not counted.
SAME_SPELLING: dict[str, dict[str, int]] = {
    # the peer-compatible key names P:processing, P:delayed, P:dead (FIXED_KEYS)
    "rq_cli.core.contract.keys": {"processing": 1, "delayed": 1, "dead": 1},
    # the scripts' argument names and reply fields (named counts: "dead", "requeued", ...)
    "rq_cli.core.contract.specs": {"max_attempts": 4, "dead": 2, "missing": 1, "requeued": 1},
    # the Stats counts, declared once: their names, reply fields and headings
    "rq_cli.core.contract.counts": {"pending": 3, "processing": 2, "leased": 3, "delayed": 3,
                           "dead": 4},
    # Redis Functions: the library is missing on the server (a refusal, not an item)
    "rq_cli.core.scripting.calling": {"missing": 3},
    # a getattr default that tells a missing attribute from None (Typer's internals)
    "rq_cli.cli.internals": {"missing": 1},
    # the config key max_attempts
    "rq_cli.settings.rules": {"max_attempts": 1},
    # report fields as table columns, and the verb of requeue-dead's lines
    "rq_cli.cli.maintain": {"dead": 2, "missing": 1, "requeued": 4, "pending": 1,
                            "processing": 1, "delayed": 1},
    # an error group's state: a Literal type spells its values
    "rq_cli.core.errgroups": {"dead": 1},
    # the watch's column of a queue's error (a Stats field)
    "rq_cli.cli.watch": {"pending": 1},
    # the past tense of complete/fail/extend in a message
    "rq_cli.cli.leasing": {"completed": 1, "failed": 1, "extended": 1},
    # a message's "failed:" prefix, the dead column shown in red
    "rq_cli.dash.app": {"dead": 1, "failed": 1},
    # the verb of a requeue's message
    "rq_cli.console.actions": {"requeued": 1},
}


def spellings(source: str) -> dict[str, int]:
    """How often each word of the vocabulary is a string constant in ``source``, field names
    (dict keys, subscripts, the first argument of Column, get, getattr) aside."""
    import ast
    from collections import Counter

    tree = ast.parse(source)
    fields: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            fields |= {id(k) for k in node.keys if k is not None}
        elif isinstance(node, ast.Subscript):
            fields.add(id(node.slice))
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("get", "Column", "pop", "setdefault"):
                fields.add(id(node.args[0]))
            elif name in ("getattr", "setattr", "hasattr") and len(node.args) > 1:
                fields.add(id(node.args[1]))
    words = vocabulary()
    return dict(Counter(node.value for node in ast.walk(tree)
                        if isinstance(node, ast.Constant) and isinstance(node.value, str)
                        and node.value in words and id(node) not in fields))


def test_no_python_module_spells_a_state_outcome_reason_or_counter() -> None:
    import pathlib

    package = pathlib.Path(rq_cli.__file__).resolve().parent
    found = {}
    for path in sorted(package.rglob("*.py")):
        module = ".".join(path.relative_to(package.parent).with_suffix("").parts)
        if module == "rq_cli.core.codes":  # the definition
            continue
        if counts := spellings(path.read_text()):
            found[module] = counts
    assert found == SAME_SPELLING
    # the checker sees a spelling, and leaves field names alone
    assert spellings('if state == "dead":\n    x = {"dead": 1}["dead"]\n') == {"dead": 1}
    assert spellings('Column("pending")\ngetattr(s, "pending")\n') == {}


def test_peek_rows_are_read_by_name() -> None:
    """peek.lua writes one value per name of SPECS["peek"].rows, and the rows decode into
    named tuples of those names."""
    with open(os.path.join(scripts.LUA_DIR, "peek.lua")) as f:
        code = re.sub(r"--.*$", "", f.read(), flags=re.M)
    # (then its per-item fields, core/contract/fields.py, in one helper)
    assert "put_item_fields(out, id, live)" in code
    assert code.count("out[#out + 1] =") + len(fields.names(fields.PEEK)) \
        == len(specs.SPECS["peek"].rows)
    assert specs.SPECS["item"].rows == specs.SPECS["peek"].rows
    reply = specs.SPECS["holders"].decode([b"7", b"s", 5, 1, b"8", b"t", 6, 0])
    assert [(r.id, r.live) for r in reply.rows] == [(b"7", 1), (b"8", 0)]
    assert specs.SPECS["holders"].decode([]).rows == []


# -- every name a script uses, it gets ----------------------------------------------------

#: the globals of the servers' Lua (Redis, Valkey): everything else must be defined
_LUA_GLOBALS = {"redis", "cjson", "cmsgpack", "bit", "struct", "KEYS", "ARGV", "table",
                "string", "math", "tonumber", "tostring", "ipairs", "pairs", "unpack", "type",
                "setmetatable", "getmetatable", "rawget", "rawset", "error", "pcall", "next",
                "select", "assert"}
_KEYWORDS = {"and", "break", "do", "else", "elseif", "end", "false", "for", "function", "if",
             "in", "local", "nil", "not", "or", "repeat", "return", "then", "true", "until",
             "while", "goto"}
_LUA_STRING = re.compile(r"--\[\[.*?\]\]|--[^\n]*|\[\[.*?\]\]|'(?:\\.|[^'\\\n])*'"
                         r"|\"(?:\\.|[^\"\\\n])*\"", re.S)


def _undefined(code: str) -> set[str]:
    """The names ``code`` reads that it never defines (``local``, a function's parameter,
    a ``for`` variable) and that are not the server's globals: each would be a nil global
    at run time. (A rough scan: it does not follow scopes, so it finds a name defined
    nowhere, which is what a script that did not get a definition shows.)"""
    code = _LUA_STRING.sub(lambda m: " " * len(m.group(0)) if m.group(0)[0] != "-"
                           or "\n" not in m.group(0) else "\n", code)
    defined: set[str] = set()
    for m in re.finditer(r"\blocal\s+function\s+(\w+)|\blocal\s+([\w\s,]+?)(?:=|\n)", code):
        defined.update(n for n in re.split(r"[\s,]+", m.group(1) or m.group(2)) if n)
    for m in re.finditer(r"\bfunction\s*[\w.:]*\(([^)]*)\)", code):
        defined.update(n for n in re.split(r"[\s,]+", m.group(1)) if n and n != "...")
    for m in re.finditer(r"\bfor\s+([\w\s,]+?)\s+(?:=|in\b)", code):
        defined.update(n for n in re.split(r"[\s,]+", m.group(1)) if n)
    used: set[str] = set()
    depth = 0
    for m in re.finditer(r"[{}]|(?<!\w)([A-Za-z_]\w*)(\s*=(?!=))?", code):
        tok = m.group(0)
        if tok == "{":
            depth += 1
        elif tok == "}":
            depth -= 1
        elif m.group(2) and depth > 0:
            continue  # a table constructor's field name
        elif m.group(1) not in _KEYWORDS:
            before = code[max(m.start() - 2, 0):m.start()]
            if before.endswith(":") or (before.endswith(".") and before != ".."):
                continue  # a field or a method
            used.add(m.group(1))
    # the --@lazy definitions, read as L.<name>, made as function L.<name>
    lazy = {f"L.{n}" for n in re.findall(r"(?<![\w.])L\.(\w+)", code)}
    lazy -= {f"L.{n}" for n in re.findall(r"\bfunction L\.(\w+)", code)}
    return (used - defined - _LUA_GLOBALS) | lazy


def test_every_script_gets_every_name_it_uses() -> None:
    for name in specs.SCRIPTS:
        assert not _undefined(scripts.source(name)), name
    assert not _undefined(scripts.library().code.split("\n", 1)[1])  # (after the #! line)


def test_the_check_finds_a_missing_definition() -> None:
    src = scripts.source("complete")
    assert _undefined(src.replace("local function complete_pairs", "local function other")) \
        == {"complete_pairs"}


def test_a_script_declares_the_helpers_it_names() -> None:
    body = "--@uses count\nlocal x = drop_meta('1')\ncount('y', 1)\n"
    try:
        scripts.declared_uses("demo", body)
    except ValueError as e:
        assert "missing ['drop_meta']" in str(e)
    else:
        raise AssertionError("an undeclared helper was accepted")
    assert scripts.declared_uses("demo", "--@uses count drop_meta\n" + body[14:]) \
        == {"count", "drop_meta"}


def test_one_flag_parser() -> None:
    from rq_cli.core.contract.env import env_bool

    env = {"A": " FALSE ", "B": "off", "C": "1", "D": "", "E": "yes"}
    assert [env_bool(n, env=env) for n in "ABCDEF"] == [False, False, True, False, True, False]
    assert env_bool("D", default=True, env=env) and env_bool("F", default=True, env=env)
    assert not env_bool("A", default=True, env=env)


def test_environment_variables_are_named_once() -> None:
    """No module of rq_cli but core/contract/env.py spells an RQ_CLI_* variable's name in code."""
    import pathlib

    root = pathlib.Path(rq_cli.__file__).parent
    bad = []
    for path in root.rglob("*.py"):
        if path.name == "env.py" or "worker" in path.name:
            continue
        for lit in re.findall(r"[\"'](RQ_CLI_[A-Z_]+)[\"']", path.read_text()):
            bad.append((path.name, lit))
    assert not bad


def test_one_id_rule_and_one_session_format() -> None:
    import pytest

    from rq_cli.cli.reading import check_input_id as read_id
    from rq_cli.core.contract.limits import MAX_ID_BYTES
    from rq_cli.core.contract.util import check_id, id_problem, make_session, session_origin
    from rq_cli.errors import BadInputError, UsageError

    long = "é" * (MAX_ID_BYTES // 2 + 1)  # under the limit in characters, over it in bytes
    for bad in ("", long):
        why = id_problem(bad)
        assert why
        with pytest.raises(UsageError, match=why):
            check_id(bad)
        with pytest.raises(BadInputError, match=why):
            read_id(bad)
    ok = "é" * (MAX_ID_BYTES // 2)
    assert check_id(ok) == read_id(ok) == ok
    host, pid = session_origin(make_session("w1"))
    assert (host, pid) == (os.uname().nodename, os.getpid())
    assert make_session("w1").endswith(":w1") and session_origin(make_session())[1] == os.getpid()


def test_one_definition_of_states_layouts_and_ends() -> None:
    from typing import get_args

    from rq_cli.core import codes, filtering
    from rq_cli.core.codes import PurgeChoice, PurgeState, State
    from rq_cli.core.types import QueueOptions
    from rq_cli.output import metrics
    from rq_cli.settings import rules

    assert codes.STATES == ("pending", "processing", "delayed", "dead")
    assert get_args(State) == codes.STATES  # (the typing Literal, checked against the enum)
    assert get_args(PurgeState) == codes.PURGE_STATES == (*codes.STATES, "all")
    assert metrics.STATES is codes.STATES
    assert filtering.STATES is codes.STATES
    assert [c.value for c in PurgeChoice] == [*codes.STATES, "all"]
    assert codes.LAYOUTS is rules.LAYOUTS
    assert rules.REQUEUE_ENDS is codes.REQUEUE_ENDS
    assert QueueOptions().layout in codes.LAYOUTS and QueueOptions().requeue in codes.REQUEUE_ENDS


def test_the_engine_names_parameters_and_the_cli_words_flags() -> None:
    import pytest

    from rq_cli.core.filtering import ItemFilter
    from rq_cli.errors import ParameterError, UsageError

    with pytest.raises(ParameterError) as info:
        ItemFilter(min_attempts=-1)
    assert str(info.value) == "min_attempts cannot be negative"  # the library: no flag names
    assert isinstance(info.value, UsageError) and info.value.param == "min_attempts"
    from rq_cli.ops.filters import FLAG_OF

    assert info.value.worded(FLAG_OF) == "--min-attempts cannot be negative"
    assert info.value.worded({}) == str(info.value)
    # importing the CLI changed nothing of the engine's error: the CLI words it when it reports
    assert str(info.value) == "min_attempts cannot be negative"
    assert not hasattr(ParameterError, "NAMES")
    import pathlib

    for path in (pathlib.Path(rq_cli.__file__).parent / "core").rglob("*.py"):
        assert not re.search(r"Error\(f?\"--", path.read_text()), path  # no flag in the core


def test_no_script_cites_the_readme() -> None:
    """The README is the front door: the scripts' comments cite the manual (docs/...)."""
    from pathlib import Path

    cites = [p.name for p in Path(scripts.LUA_DIR).glob("*.lua") if "README" in p.read_text()]
    assert cites == []
