"""``rq-cli server status|stop``: the embedded server (``--url embedded:[DIR]``)."""

from pathlib import Path
from typing import Annotated

import typer

from ..errors import NothingToDo
from .common import JsonOpt, State, state
from .helptext import RqCommand

server_app = typer.Typer(name="server", help="Manage the embedded server (--url embedded:DIR).",
                         no_args_is_help=True, rich_markup_mode=None,
                         add_completion=False)  # --install-completion: the root's alone

DirArg = Annotated[str | None, typer.Argument(
    help="The server's data directory. Default: DIR of an embedded: URL given by --url or "
         "the config, else ./.rq-cli.", show_default=False, metavar="DIR")]


def _directory(st: State, directory: str | None) -> str:
    if directory:
        return directory
    from ..connection.connect import DEFAULT_EMBEDDED_DIR, scheme_of

    url = st.default_url()
    if scheme_of(url) == "embedded":
        return url.partition(":")[2] or DEFAULT_EMBEDDED_DIR
    return DEFAULT_EMBEDDED_DIR


@server_app.command("status", cls=RqCommand)
def status(ctx: typer.Context, directory: DirArg = None, as_json: JsonOpt = False) -> None:
    """Show whether the embedded server of DIR runs (exit 3 if not).

    Example: rq-cli server status ./.rq-cli
    """
    st = state(ctx)
    from ..connection import embedded

    info = embedded.status(_directory(st, directory))
    out = st.output(as_json)
    out.record(info, title="embedded server")
    if info["running"] and not out.json:  # a terminal: say when it can lose work
        from .doctor import warn_risks

        url = f"unix://{info['socket']}"
        warn_risks(out, {url: st.client(url)})
    if not info["running"]:
        raise NothingToDo(f"no embedded server runs in {info['dir']}")


@server_app.command("stop", cls=RqCommand)
def stop(ctx: typer.Context, directory: DirArg = None, as_json: JsonOpt = False) -> None:
    """Stop the embedded server of DIR; its data stays on disk (exit 3 if none ran).

    Example: rq-cli server stop
    """
    st = state(ctx)
    from ..connection import embedded

    where = str(Path(_directory(st, directory)).resolve())
    stopped = embedded.stop(where)
    st.output(as_json).record({"dir": where, "stopped": stopped}, title="embedded server")
    if not stopped:
        raise NothingToDo(f"no embedded server was running in {where}")
