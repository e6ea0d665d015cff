#!/usr/bin/env python3
"""Group rq_cli/core/ into subpackages named for what their parts serve (issue 41).

    python scripts/regroup_core.py            # move, rewrite, print what it did
    python scripts/regroup_core.py --check    # exit 1 if anything is left to move or rewrite

One table (:data:`GROUPS`) says which folder each engine module goes to; the modules of
:data:`TOP` stay at core/'s top: the library's public API, the import paths
docs/library.md gives. The script

1. ``git mv``s each module of the table from ``rq_cli/core/<m>.py`` to
   ``rq_cli/core/<group>/<m>.py`` (and ``core/lua/`` to ``core/scripting/lua/``, file by
   file), and writes each group's ``__init__.py`` (its docstring from :data:`ABOUT`);
2. rewrites every reference to a moved module across the repository's tracked and new text
   files: imports (absolute, relative, ``from rq_cli.core import a, b`` split per folder),
   dotted names (``rq_cli.core.keys.FIXED_KEYS``, ``..core.keys``), paths
   (``rq_cli/core/keys.py``, ``core/lua/*.lua``, ``"core" / "keys.py"``).

It is idempotent: run it again after merging a branch written against the flat core/, and
it moves what that branch added under an old path and rewrites its new imports (a relative
import of a moved file that no longer resolves is read as written against the flat
layout). A module of core/ in neither table is named, and the script exits 2: give it a
line in :data:`GROUPS` (or :data:`TOP`). CHANGELOG.md is history and is left as written.
"""

from __future__ import annotations

import argparse
import io
import re
import shutil
import subprocess
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "rq_cli" / "core"

#: The modules that stay at core/'s top: the library's public API (docs/library.md).
TOP = ("queue", "types", "reports", "codes", "errgroups", "filtering", "history")

#: Each folder of core/ and its modules, lowest layer first (tests/core/test_architecture.py
#: CORE_LAYERS keeps the layers).
GROUPS: dict[str, tuple[str, ...]] = {
    "contract": ("keys", "fields", "counts", "specs", "limits", "env", "ages", "util",
                 "batches", "errnorm"),
    "scripting": ("scripts", "scriptparts", "libfold", "calling"),
    "operations": ("settled", "base", "reads", "repairs", "deep", "crossmove", "durable",
                   "audit", "control", "limiting", "batchops"),
    "pushing": ("bulk", "bulk_tx"),
    "sharding": ("sharded", "shardmeta", "shardcopies", "shardpush", "shardops", "shardwait",
                 "shardstats", "resharding", "shardfront", "shardlimits"),
    "fleet": ("many", "discover"),
}

#: Each folder's docstring (its __init__.py).
ABOUT = {
    "contract": "What Python, the Lua scripts and the peer clients agree on, each defined once:\n"
                "the key schema, per-item fields, the Stats counts, the scripts' arguments\n"
                "and replies, the limits, the environment, ids with their push time, names\n"
                "and ids allowed, a batch's record, an error's group key.",
    "scripting": "The Lua scripts: each built from lua/ and its spec (and the hot ones as one\n"
                 "Functions library), and sent by FCALL or EVALSHA.",
    "operations": "One queue's operations behind WorkQueue (core/queue.py): the calls' base,\n"
                  "reads, repairs, deep clean, durability, fleet-wide limits, batches, the\n"
                  "audit trail and a console's asks.",
    "pushing": "Bulk push: pipelined batches, and pushes as transactions.",
    "sharding": "One queue over N queues (docs/DESIGN.md section 7): the record, the write\n"
                "side, every shard's operations, waiting, stats, resharding.",
    "fleet": "Many queues at once: finding them, one script over many.",
}

#: Where the Lua scripts go (they live beside the module that builds them).
LUA_GROUP = "scripting"

#: Text files rewritten (by suffix; files without one under .ci/ too).
TEXT = {".py", ".md", ".toml", ".yml", ".yaml", ".cfg", ".ini", ".txt", ".lua", ".html",
        ".json", ".sh", ".tcss"}
#: The longest line (pyproject.toml's ruff line-length).
LINE = 100
#: The quotes that open a docstring (or another string of prose).
TRIPLE = ('"""', "'''")
#: Left as written: history.
SKIP = {"CHANGELOG.md"}

GROUP_OF = {m: g for g, ms in GROUPS.items() for m in ms}
_MODS = "|".join(sorted(GROUP_OF, key=len, reverse=True))
#: ``core.keys`` (dotted: absolute, relative from outside core, prose) not already grouped.
DOTTED = re.compile(rf"(?<![\w])core\.({_MODS})\b(?!\.py)")
#: ``core/keys.py`` and ``core/lua`` (paths) not already grouped.
PATH = re.compile(rf"(?<![\w])core/({_MODS})\.py\b")
LUA_PATH = re.compile(r"(?<![\w])core/lua\b")
#: pathlib forms: ``"core" / "keys.py"``, ``"core" / "lua"``.
PATHLIB = re.compile(rf"""(["'])core\1 / (["'])({_MODS})\.py\2""")
PATHLIB_LUA = re.compile(r"""(["'])core\1 / (["'])lua\2""")
#: ``from <module> import <names>`` (one line, or parenthesised over several).
FROM = re.compile(r"^(?P<indent>[ \t]*)from (?P<mod>\.*[\w.]*) import "
                  r"(?P<names>\([^)]*\)|[^\n]*?)(?P<end>[ \t]*(?:#[^\n]*)?)$", re.M)


def git(*args: str) -> str:
    run = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)
    if run.returncode:
        sys.exit(f"git {' '.join(args)}: {run.stderr.strip()}")
    return run.stdout


def moves(check: bool) -> list[str]:
    """Move each grouped module (and the Lua files) into its folder; what was moved."""
    done = []
    for group, modules in GROUPS.items():
        folder = CORE / group
        init = folder / "__init__.py"
        text = f'"""{ABOUT[group]}\n"""\n'
        if not init.exists() or init.read_text() != text:
            done.append(f"write {init.relative_to(ROOT)}")
            if not check:
                folder.mkdir(exist_ok=True)
                init.write_text(text)
                git("add", str(init))
        for m in modules:
            old, new = CORE / f"{m}.py", folder / f"{m}.py"
            if old.exists():
                if new.exists():
                    sys.exit(f"both {old.relative_to(ROOT)} and {new.relative_to(ROOT)} exist: "
                             "merge them by hand, then run this again")
                done.append(f"git mv {old.relative_to(ROOT)} {new.relative_to(ROOT)}")
                if not check:
                    git("mv", str(old), str(new))
    old_lua, new_lua = CORE / "lua", CORE / LUA_GROUP / "lua"
    if old_lua.is_dir():
        for path in sorted(old_lua.iterdir()):
            target = new_lua / path.name
            if target.exists():
                sys.exit(f"both {path.relative_to(ROOT)} and {target.relative_to(ROOT)} exist")
            done.append(f"git mv {path.relative_to(ROOT)} {target.relative_to(ROOT)}")
            if not check:
                new_lua.mkdir(parents=True, exist_ok=True)
                git("mv", str(path), str(target))
        if not check and not any(p for p in old_lua.iterdir() if p.name != "__pycache__"):
            for p in old_lua.glob("__pycache__/*"):
                p.unlink()
            for p in (old_lua / "__pycache__", old_lua):
                if p.is_dir():
                    p.rmdir()
    return done


def unplaced() -> list[str]:
    """Modules at core/'s top in neither table."""
    placed = {*TOP, *GROUP_OF, "__init__"}
    return sorted(p.name for p in CORE.glob("*.py") if p.stem not in placed)


def new_name(module: str) -> str:
    """``module`` (absolute) after the move."""
    parts = module.split(".")
    if parts[:2] == ["rq_cli", "core"] and len(parts) > 2 and parts[2] in GROUP_OF:
        return ".".join(["rq_cli", "core", GROUP_OF[parts[2]], *parts[2:]])
    return module


def module_of(path: Path) -> tuple[str, bool]:
    """The module a file of rq_cli/ is, and whether it is a package's __init__."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def exists(module: str) -> bool:
    base = ROOT.joinpath(*module.split("."))
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists()


def resolve(here: str, is_package: bool, dots: int, name: str) -> str:
    base = here.split(".") if is_package else here.split(".")[:-1]
    base = base[: len(base) - (dots - 1)] if dots > 1 else base
    return ".".join([*base, name] if name else base)


def relative(here: str, is_package: bool, target: str) -> str:
    """``target`` as a relative import from module ``here``."""
    base = here.split(".") if is_package else here.split(".")[:-1]
    to = target.split(".")
    common = 0
    while common < min(len(base), len(to)) and base[common] == to[common]:
        common += 1
    return "." * (len(base) - common + 1) + ".".join(to[common:])


def rewrite_import(m: re.Match[str], path: Path) -> str:
    """One ``from X import names`` statement, with the moved modules' new names."""
    mod, names = m.group("mod"), m.group("names")
    dots = len(mod) - len(mod.lstrip("."))
    in_package = path.is_relative_to(ROOT / "rq_cli")
    if dots and not in_package:
        return m.group(0)
    here, is_package = module_of(path) if in_package else ("", False)
    target = resolve(here, is_package, dots, mod[dots:]) if dots else mod
    items = [n.strip() for n in re.sub(r"#[^\n]*", "", names).strip("()").replace("\n", " ")
             .split(",") if n.strip()]
    bare = [i.split(" as ")[0].strip() for i in items]
    if not items or not all(n.isidentifier() or n == "*" for n in bare):
        return m.group(0)  # (prose that reads like an import)
    if dots and here.startswith("rq_cli.core.") and (
            not exists(target) or (not mod[dots:] and not all(
                exists(f"{target}.{n}") for n in bare))):
        # written against the flat core/: resolve from the file's old place
        flat = "rq_cli.core." + here.split(".")[-1]
        target = resolve(flat, is_package, dots, mod[dots:])
    # `from rq_cli.core import keys, queue`: each submodule from its own folder
    groups: dict[str, list[str]] = {}
    for item in items:
        name = item.split(" as ")[0].strip()
        sub = new_name(f"{target}.{name}")
        parent = sub.rsplit(".", 1)[0] if sub != f"{target}.{name}" else new_name(target)
        groups.setdefault(parent, []).append(item)

    def spelled(module: str) -> str:
        return relative(here, is_package, module) if dots else module

    if len(groups) == 1 and spelled(next(iter(groups))) == mod:
        return m.group(0)

    lines = []
    for parent, group_items in groups.items():
        joined = ", ".join(group_items)
        line = f"{m.group('indent')}from {spelled(parent)} import {joined}"
        if len(line + m.group("end")) > LINE:
            inner = "".join(f"{m.group('indent')}    {i},\n" for i in group_items)
            line = (f"{m.group('indent')}from {spelled(parent)} import (\n"
                    f"{inner}{m.group('indent')})")
        lines.append(line)
    lines[-1] += m.group("end")
    return "\n".join(lines)


def rewrite(path: Path, text: str) -> str:
    if path.suffix == ".py":
        text = FROM.sub(lambda m: rewrite_import(m, path), text)
    text = DOTTED.sub(lambda m: f"core.{GROUP_OF[m.group(1)]}.{m.group(1)}", text)
    text = PATH.sub(lambda m: f"core/{GROUP_OF[m.group(1)]}/{m.group(1)}.py", text)
    text = LUA_PATH.sub(f"core/{LUA_GROUP}/lua", text)
    text = PATHLIB.sub(lambda m: f"{m.group(1)}core{m.group(1)} / {m.group(2)}"
                       f"{GROUP_OF[m.group(3)]}{m.group(2)} / "
                       f"{m.group(2)}{m.group(3)}.py{m.group(2)}", text)
    text = PATHLIB_LUA.sub(lambda m: f'{m.group(1)}core{m.group(1)} / {m.group(2)}{LUA_GROUP}'
                           f'{m.group(2)} / {m.group(2)}lua{m.group(2)}', text)
    return text


def _prose_lines(text: str) -> dict[int, tuple[str, int]]:
    """Line number (0-based) -> (kind, token number) of each comment line and each line of
    a triple-quoted string (prose, not code)."""
    kinds: dict[int, tuple[str, int]] = {}
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return kinds
    for n, tok in enumerate(tokens):
        if tok.type == tokenize.COMMENT and not tok.line[: tok.start[1]].strip():
            kinds[tok.start[0] - 1] = ("#", 0)  # (a comment goes on in the next line's)
        elif tok.type == tokenize.STRING and tok.string.lstrip("rbuRBU")[:3] in TRIPLE:
            for row in range(tok.start[0] - 1, tok.end[0]):
                kinds[row] = ("string", n)
    return kinds


def wrap(text: str) -> str:
    """``text`` with each comment or docstring line over :data:`LINE` broken at a space, the
    words carried to the start of the next line of the same comment or string (or to a line
    of their own): the longer paths make prose lines longer; code is left to a person."""
    lines = text.split("\n")
    kinds = _prose_lines(text)
    i = 0
    while i < len(lines):
        line, kind = lines[i], kinds.get(i)
        indent = len(line) - len(line.lstrip())
        cut = line.rfind(" ", 0, LINE + 1)
        if len(line) <= LINE or kind is None or cut <= indent:
            i += 1
            continue
        if kind[0] == "#":
            prefix = line[:indent] + ("#: " if line.lstrip().startswith("#:") else "# ")
        else:
            prefix = line[:indent]
        head, tail = line[:cut].rstrip(), line[cut + 1:]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        rest = nxt[len(prefix):]
        same = (kinds.get(i + 1) == kind and nxt.startswith(prefix) and rest.strip() != ""
                and not rest.startswith((" ", "-", "*")) and rest.strip()[:3] not in TRIPLE
                and tail.strip()[-3:] not in TRIPLE)
        lines[i] = head
        if same:
            lines[i + 1] = prefix + tail + " " + rest
        else:
            lines.insert(i + 1, prefix + tail)
            kinds = {(k if k <= i else k + 1): v for k, v in kinds.items()}
            kinds[i + 1] = kind
        i += 1
    return "\n".join(lines)


def files() -> list[Path]:
    listed = git("ls-files", "--cached", "--others", "--exclude-standard").splitlines()
    out = []
    for name in listed:
        path = ROOT / name
        if name in SKIP or not path.is_file() or path.is_symlink():
            continue
        if path.suffix in TEXT or (not path.suffix and name.startswith(".ci/")):
            out.append(path)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 if anything is left to move or rewrite")
    args = parser.parse_args()
    if left := unplaced():
        print(f"modules of rq_cli/core/ in no group: {', '.join(left)}: give each a line in "
              "GROUPS (or TOP) of scripts/regroup_core.py", file=sys.stderr)
        return 2
    done = moves(args.check)
    if args.check and done:  # (the rewrite reads the files where the moves put them)
        print("\n".join(done))
        return 1
    for path in files():
        if path == Path(__file__).resolve():
            continue
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        new = rewrite(path, text)
        if path.suffix == ".py" and new != text:
            new = wrap(new)
        if new != text:
            done.append(f"rewrite {path.relative_to(ROOT)}")
            if not args.check:
                path.write_text(new)
    rewritten = [str(ROOT / d.split(" ", 1)[1]) for d in done
                 if d.startswith("rewrite ") and d.endswith(".py")]
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if rewritten and ruff and not args.check:  # (imports in order again: ruff's isort)
        subprocess.run([ruff, "check", "--fix", "--select", "I", "--quiet", *rewritten],
                       cwd=ROOT, check=False)
    print("\n".join(done) or "nothing to do")
    for name in (d.split(" ", 1)[1] for d in done if d.startswith("rewrite ")):
        path = ROOT / name
        if path.suffix == ".py" and path.exists():  # (prose the longer names pushed over)
            for n, line in enumerate(path.read_text().splitlines(), start=1):
                if len(line) > LINE:
                    print(f"{name}:{n}: longer than {LINE} characters: wrap it by hand")
    return 1 if args.check and done else 0


if __name__ == "__main__":
    sys.exit(main())
