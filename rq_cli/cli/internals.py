"""Every start-up shortcut that leans on Typer, Click or CPython internals, in one place.

Set ``RQ_CLI_PLAIN_TYPER=1`` to turn all of them off: rq-cli then runs as plain Typer (slower
to start, same behaviour). CI runs the command tests once in that mode, so a Typer upgrade that
changes an internal shows up as a difference between the two runs, never as a silent change.
:data:`ENABLED` is the switch; each shortcut below is a no-op when it is off.

1. Plain parameters without pydantic (:func:`install_params`).

   Typer 0.29 converts every parameter value through a pydantic ``TypeAdapter``, built on
   first use. Importing pydantic and building the adapters costs ~80 ms per run: more than
   the rest of ``rq-cli push q '{}'`` apart from importing redis (start-up's budget is
   1.3x ``import redis``). Our commands use only plain types -- str, int and float (with
   min/max), bool, Enum choices and list[str] -- so before parsing, each such parameter gets
   a small converter with the same behaviour (and Typer's own error messages' shape:
   ``Invalid value for '--lease': ...``, exit 2). Anything else keeps Typer's adapter. This
   uses two private attributes of Typer's parameters (``type_descriptor`` and
   ``_runtime_param``); on a Typer without them it does nothing, so an upgrade can make
   start-up slower but never wrong. ``tests/cli/test_cli_app.py`` checks both the behaviour and
   that pydantic stays unimported.

2. Completion candidates one to a line (:func:`install_completion`).

   Typer formats the help shown next to each zsh, fish and PowerShell candidate with rich,
   at the console width (``typer._completion_classes._sanitize_help_text``), so a long help
   text is split over several lines. The shells read one candidate per line: on an
   80-column terminal fish offered the tail of the ``--config`` help as a candidate of its
   own. Our help texts are plain (``rich_markup_mode=None``), so nothing needs rendering:
   each of those shells' completion classes is replaced with a subclass that puts the help on
   the candidate's line, its whitespace collapsed. It also spares every TAB the import of
   rich. Only how a candidate is printed changes: the scripts the shells source
   (``completions/``) and the protocol stay Typer's. Without Typer's registry of completion
   classes it does nothing.

3. Exit without the interpreter's teardown (:func:`fast_exit`): ``atexit._run_exitfuncs``
   then ``os._exit``, see :func:`rq_cli.cli.root.hard_exit`.
"""

from __future__ import annotations

import atexit
import math
import os
from enum import Enum
from typing import Any, get_args, get_origin

import typer

from ..core.contract.env import ENV_PLAIN_TYPER

#: False with RQ_CLI_PLAIN_TYPER=1: every shortcut of this module is off.
ENABLED = os.environ.get(ENV_PLAIN_TYPER, "") not in ("1", "true", "yes")

_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE = frozenset({"", "0", "off", "f", "false", "n", "no"})


class _Plain:
    """Duck-types ``typer._coercion.RuntimeParam``: ``coerce(value, param, ctx)``."""

    def __init__(self, kind: type, lo: float | None, hi: float | None,
                 case_sensitive: bool) -> None:
        self.kind, self.lo, self.hi, self.case_sensitive = kind, lo, hi, case_sensitive

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        many = param.multiple or param.nargs == -1
        if value is None:
            return () if many else None
        try:
            if many:
                if isinstance(value, str):
                    raise ValueError("Value must be an iterable.")
                return [self.one(v) for v in value]
            return self.one(value)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), ctx=ctx, param=param) from None

    def one(self, value: Any) -> Any:
        kind = self.kind
        if isinstance(value, bytes):
            value = value.decode("utf-8", "surrogateescape")
        if kind is str:
            return str(value)
        if kind is bool:
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in _TRUE or text in _FALSE:
                return text in _TRUE
            raise ValueError(f"{value!r} is not a valid boolean.")
        if issubclass(kind, Enum):
            return self.choice(value)
        return self.number(value)

    def choice(self, value: Any) -> Any:
        members = list(self.kind)  # type: ignore[call-overload]
        if any(value is m for m in members):
            return value
        text = str(value) if self.case_sensitive else str(value).lower()
        for member in members:
            name = str(member.value)
            if (name if self.case_sensitive else name.lower()) == text:
                return member
        allowed = ", ".join(repr(str(m.value)) for m in members)
        raise ValueError(f"{value!r} is not one of {allowed}.")

    def number(self, value: Any) -> Any:
        number: Any
        try:
            number = self.kind(value) if not isinstance(value, self.kind) else value
        except (TypeError, ValueError):
            kind = "an integer" if self.kind is int else "a number"
            raise ValueError(f"{value!r} is not {kind}.") from None
        if isinstance(number, float) and not math.isfinite(number):
            raise ValueError(f"{value!r} is not a finite number.")
        if (self.lo is not None and number < self.lo) or \
                (self.hi is not None and number > self.hi):
            raise ValueError(f"{value!r} is not in the range {_range(self.lo, self.hi)}.")
        return number


def _range(lo: float | None, hi: float | None) -> str:
    if lo is None:
        return f"x<={hi}"
    if hi is None:
        return f"x>={lo}"
    return f"{lo}<=x<={hi}"


def _plain_for(param: Any) -> _Plain | None:
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is None or getattr(param, "_runtime_param", "missing") is not None:
        return None
    info = descriptor.parameter_info
    if getattr(descriptor, "file_annotation", None) is not None or \
            getattr(info, "parser", None) is not None or getattr(info, "clamp", False):
        return None
    annotation = descriptor.annotation
    if get_origin(annotation) is list and get_args(annotation) == (str,):
        annotation = str
    if annotation in (str, bool, int, float) or (
            isinstance(annotation, type) and issubclass(annotation, Enum)):
        return _Plain(annotation, getattr(info, "min", None), getattr(info, "max", None),
                      bool(getattr(info, "case_sensitive", True)))
    return None


def install_params(command: Any, ctx: Any, *, subcommands: bool = True) -> None:
    """Give every plain parameter of ``command`` (and its subcommands) a light converter.

    ``ctx`` (the root context) names the help options, which Click creates on first use;
    subcommands inherit the same names. The root passes ``subcommands=False``: its
    commands are built lazily, and each gets its converters once resolved.
    """
    if not ENABLED or getattr(command, "_rq_fast_params", False):
        return
    params = list(getattr(command, "params", ()))
    get_help = getattr(command, "get_help_option", None)
    if get_help is not None:
        help_option = get_help(ctx)
        if help_option is not None:
            params.append(help_option)
    for param in params:
        plain = _plain_for(param)
        if plain is not None:
            param._runtime_param = plain
    command._rq_fast_params = True
    if subcommands:
        for sub in getattr(command, "commands", {}).values():
            install_params(sub, ctx)


# -- completion: one candidate per line ------------------------------------------------------
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


def install_completion() -> None:
    """Register the one-line formats for every shell Typer registered a class for."""
    if not ENABLED:
        return
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


def fast_exit(status: int) -> bool:
    """Run the atexit handlers and end the process with ``status`` at once; False (and
    nothing done) when the shortcuts are off, so the caller exits normally."""
    if not ENABLED:
        return False
    atexit._run_exitfuncs()
    return True
