"""``rq-cli server status|stop``: the embedded server (``--url embedded:[DIR]``)."""

from __future__ import annotations

from dataclasses import asdict, is_dataclass
from typing import Annotated, Any, Optional

import typer

from ..errors import NothingToDo
from .common import JsonOpt, State, state

server_app = typer.Typer(name="server", help="Manage the embedded server (--url embedded:DIR).",
                         no_args_is_help=True, rich_markup_mode=None)

DirArg = Annotated[Optional[str], typer.Argument(  # noqa: UP007 (typer)
    help="The server's data directory. Default: DIR of an embedded: URL given by --url or "
         "the config, else ./.rq-cli.", show_default=False, metavar="[DIR]")]


def _directory(st: State, directory: str | None) -> str:
    if directory:
        return directory
    from ..connect import DEFAULT_EMBEDDED_DIR, scheme_of

    url = st.default_url()
    if scheme_of(url) == "embedded":
        return url.partition(":")[2] or DEFAULT_EMBEDDED_DIR
    return DEFAULT_EMBEDDED_DIR


def _as_row(value: Any) -> dict[str, Any]:
    if is_dataclass(value) and not isinstance(value, type):
        row = asdict(value)
    elif isinstance(value, dict):
        row = dict(value)
    else:
        row = {"result": value}
    return {k: (str(v) if not isinstance(v, (str, int, float, bool, type(None))) else v)
            for k, v in row.items()}


@server_app.command("status")
def status(ctx: typer.Context, directory: DirArg = None, as_json: JsonOpt = False) -> None:
    """Show whether the embedded server of DIR runs (exit 3 if not).

    Example: rq-cli server status ./.rq-cli
    """
    st = state(ctx)
    from .. import embedded

    where = _directory(st, directory)
    info = _as_row(embedded.status(where))
    st.output(as_json).record({"dir": where, **info}, title="embedded server")
    if not info.get("running", True):
        raise NothingToDo(f"no embedded server runs in {where}")


@server_app.command("stop")
def stop(ctx: typer.Context, directory: DirArg = None, as_json: JsonOpt = False) -> None:
    """Stop the embedded server of DIR (its data stays on disk).

    Example: rq-cli server stop
    """
    st = state(ctx)
    from .. import embedded

    where = _directory(st, directory)
    result = embedded.stop(where)
    info = _as_row(result) if result is not None else {}
    st.output(as_json).record({"dir": where, "stopped": bool(result) if not info else True,
                               **info}, title="embedded server")
