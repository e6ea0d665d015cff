#!/usr/bin/env python3
"""Generate the shell completion scripts in ``completions/`` from the rq-cli app.

    python scripts/gen_completions.py           # (re)write completions/*
    python scripts/gen_completions.py --check   # exit 1 if a committed script is out of date

Each script is what Typer prints for ``_RQ_CLI_COMPLETE=source_<shell> rq-cli`` (the same
text as ``rq-cli --show-completion <shell>``), with a comment header added. It runs
``python -m rq_cli`` from this checkout in a subprocess with
``_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION=1`` and no config file, so the result depends
neither on the shell that runs this script nor on the machine: the same app and Typer
version always give the same bytes. tests/cli/test_completions.py checks the committed files
against a fresh run.
"""

from __future__ import annotations

import argparse
import difflib
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
COMPLETIONS = REPO / "completions"
PROG = "rq-cli"
COMPLETE_VAR = "_RQ_CLI_COMPLETE"
REGENERATE = "python scripts/gen_completions.py"

#: shell -> file name in completions/ (the names each shell's loader looks for).
FILES = {"bash": "rq-cli.bash", "zsh": "_rq-cli", "fish": "rq-cli.fish"}

_INSTALL = {
    "bash": ["Install: source it from ~/.bashrc, or copy it to",
             "  ~/.local/share/bash-completion/completions/rq-cli"],
    "zsh": ["Install: in ~/.zshrc, after compinit: source /path/to/_rq-cli"],
    "fish": ["Install: copy it to ~/.config/fish/completions/rq-cli.fish"],
}


def source(shell: str) -> str:
    """Typer's completion script for ``shell``, as ``_RQ_CLI_COMPLETE=source_<shell>`` prints it."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RQ_CLI_", "_RQ_CLI_", "_TYPER_", "COMP_"))}
    env.update({COMPLETE_VAR: f"source_{shell}", "RQ_CLI_NO_CONFIG": "1",
                "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"})
    # -m from the repository root: this checkout's rq_cli, whatever else is installed
    done = subprocess.run([sys.executable, "-m", "rq_cli"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0 or not done.stdout.strip():
        raise SystemExit(f"gen_completions: `{COMPLETE_VAR}=source_{shell} python -m rq_cli` "
                         f"failed (exit {done.returncode}): {done.stderr.strip()}")
    return done.stdout.strip() + "\n"


def render(shell: str) -> str:
    """The file for ``shell``: a comment header, then Typer's script unchanged."""
    script = source(shell)
    header = [f"# {shell} completion for {PROG}.",
              f"# Generated from the {PROG} app by scripts/gen_completions.py: do not edit.",
              f"# Regenerate with: {REGENERATE}",
              *(f"# {line}" for line in _INSTALL[shell])]
    first, _, rest = script.partition("\n")
    if shell == "zsh":  # '#compdef' must stay the first line for zsh's compinit
        if first != f"#compdef {PROG}":
            raise SystemExit(f"gen_completions: unexpected zsh script start: {first!r}")
        return "\n".join([first, *header, "", rest.lstrip("\n")])
    return "\n".join([*header, "", script])


def generate() -> dict[str, str]:
    """File name -> content, for every shell."""
    return {name: render(shell) for shell, name in FILES.items()}


def check(directory: Path) -> list[str]:
    """Messages for the files of ``directory`` that differ from a fresh generation."""
    problems = []
    for name, fresh in generate().items():
        path = directory / name
        shown = _shown(path)
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == fresh:
            continue
        if current is None:
            problems.append(f"{shown}: missing")
            continue
        diff = difflib.unified_diff(current.splitlines(keepends=True),
                                    fresh.splitlines(keepends=True),
                                    f"{shown} (committed)", f"{shown} (generated)")
        problems.append(f"{shown}: out of date\n{''.join(diff)}")
    return problems


def _shown(path: Path) -> str:
    """``path`` relative to the repository when inside it, for messages."""
    try:
        return str(path.resolve().relative_to(REPO))
    except ValueError:
        return str(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 if a script differs from the app's")
    parser.add_argument("--dir", type=Path, default=COMPLETIONS,
                        help="where the scripts live (default: completions/)")
    args = parser.parse_args(argv)
    if args.check:
        problems = check(args.dir)
        for problem in problems:
            print(problem, file=sys.stderr)
        if problems:
            print(f"completion scripts are out of date; regenerate with: {REGENERATE}",
                  file=sys.stderr)
        return 1 if problems else 0
    args.dir.mkdir(parents=True, exist_ok=True)
    for name, text in generate().items():
        path = args.dir / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {_shown(path)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
