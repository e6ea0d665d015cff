"""How a command's usage line and its arguments read in ``--help`` (and so in the man pages
and the manual, made from it): as the manual writes them, ``QUEUE...``, ``[ID]...``, with no
type in angle brackets.

Typer 0.29 writes a required argument as ``{QUEUE}`` on the usage line and adds its Python
type (``QUEUE <list[str]>``) in the list of arguments. :class:`RqCommand` (Typer's documented
``cls=``) writes both as Click does; a command may add words after its arguments to the
usage line (:attr:`RqCommand.usage_tail`: ``work``'s ``-- COMMAND [ARGS]...``).
"""

from __future__ import annotations

from typing import Any

import typer


def _argument_name(param: Any) -> str:
    """``QUEUE``, ``QUEUE...`` (many), ``[ID]...`` (optional and many)."""
    name = param.metavar or (param.name or "").upper()
    if not param.required:
        name = f"[{name}]"
    return name + ("..." if param.nargs != 1 else "")


class RqCommand(typer.core.TyperCommand):
    """A command whose usage line and arguments read as the manual writes them."""

    #: words after the arguments on the usage line
    usage_tail: tuple[str, ...] = ()

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                pieces.append(_argument_name(param))
            else:
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces + list(self.usage_tail)

    def format_options(self, ctx: Any, formatter: Any) -> None:
        args, opts = [], []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                args.append((_argument_name(param).strip("[]."), record[1]))
            elif param.param_type_name == "option":
                opts.append(record)
        if args:
            with formatter.section("Arguments"):
                formatter.write_dl(args)
        if opts:
            with formatter.section("Options"):
                formatter.write_dl(opts)
