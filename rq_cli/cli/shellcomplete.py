"""Completion candidates one to a line, whatever the terminal's width.

Typer formats the help shown next to each zsh, fish and PowerShell candidate with rich, at
the console width (``typer._completion_classes._sanitize_help_text``), so a long help text is
split over several lines. The shells read one candidate per line: on an 80-column terminal
fish offered the tail of the ``--config`` help, ``(~/.config/...).``, as a candidate of its
own. Our help texts are plain (``rich_markup_mode=None``), so nothing needs rendering:
:func:`install` replaces each of those shells' completion classes with a subclass that puts
the help on the candidate's line, its whitespace collapsed. It also spares every TAB the
import of rich.

Only how a candidate is printed changes: the scripts the shells source
(``completions/``) and the protocol stay Typer's. Like fastparams, this leans on Typer's
registry of completion classes (the one Click has); without it :func:`install` does nothing.
"""

from __future__ import annotations

from typing import Any

#: Marks a class made here, so installing twice changes nothing.
_MARK = "_rq_one_line"


def one_line(text: str | None) -> str:
    """``text`` on one line: every run of whitespace (newlines included) becomes one space."""
    return " ".join((text or "").split())


def _zsh_escape(text: str) -> str:
    # Typer's ZshComplete quoting: the candidate is inside "..." inside _arguments '...'.
    return (text.replace('"', '""').replace("'", "''").replace("$", "\\$")
            .replace("`", "\\`").replace(":", r"\\:"))


def _fish(self: Any, item: Any) -> str:
    text = one_line(item.help)
    return f"{item.value}\t{text}" if text else str(item.value)


def _zsh(self: Any, item: Any) -> str:
    text = one_line(item.help)
    value = _zsh_escape(item.value)
    return f'"{value}":"{_zsh_escape(text)}"' if text else f'"{value}"'


def _powershell(self: Any, item: Any) -> str:
    return f"{item.value}:::{one_line(item.help) or ' '}"


FORMATS = {"fish": _fish, "zsh": _zsh, "powershell": _powershell, "pwsh": _powershell}


def install() -> None:
    """Register the one-line formats for every shell Typer registered a class for."""
    try:  # the registry of the Click that Typer ships (typer.completion uses the same)
        from typer._click import shell_completion
    except ImportError:  # pragma: no cover - a Typer without it: keep its own classes
        return
    for shell, format_completion in FORMATS.items():
        base = shell_completion.get_completion_class(shell)
        if base is None or getattr(base, _MARK, False):
            continue
        one_line_class = type(base.__name__, (base,), {
            "format_completion": format_completion, _MARK: True,
            "__doc__": f"{base.__name__}, printing each candidate on one line."})
        shell_completion.add_completion_class(one_line_class, shell)
