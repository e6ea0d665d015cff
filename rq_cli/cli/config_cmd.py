"""``rq-cli config path|show``: which config file is used, and what it amounts to."""

from typing import Any

import typer

from ..errors import NothingToDo
from ..output.render import Column
from ..settings import config as configmod
from .common import JsonOpt, state
from .helptext import RqCommand

config_app = typer.Typer(name="config", help="Show which config file is used, and what it says.",
                         no_args_is_help=True, rich_markup_mode=None,
                         add_completion=False)  # --install-completion: the root's alone

QUEUE_COLUMNS = [Column("queue"), Column("prefix"), Column("url"), Column("url_source", "from"),
                 Column("password"), Column("lease_seconds", "lease s", kind="number"),
                 Column("max_attempts", "attempts", kind="number"),
                 Column("grace_seconds", "grace s", kind="number"), Column("layout"),
                 Column("requeue")]


@config_app.command("path", cls=RqCommand)
def path(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Print the path of the config file in use (exit 3 if there is none).

    Example: $EDITOR "$(rq-cli config path)"
    """
    st = state(ctx)
    out = st.output(as_json)
    used = configmod.find(st.config_path, no_config=st.no_config)
    searched = [] if st.no_config else configmod.candidates(st.config_path)
    if out.forced_json:
        out.record({"path": str(used) if used else None,
                    "searched": [{"path": str(c.path), "source": c.source, "exists": c.exists}
                                 for c in searched]})
    elif used:
        out.text(str(used))  # bare, so $(rq-cli config path) works
    if used is None:
        why = "--no-config" if st.no_config else "searched " + ", ".join(
            str(c.path) for c in searched)
        raise NothingToDo(f"no config file ({why})")


@config_app.command("show", cls=RqCommand)
def show(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Show the effective settings of every configured queue, secrets hidden.

    Example: rq-cli config show --json
    """
    st = state(ctx)
    out = st.output(as_json)
    from ..connection.connect import mask_url, url_password

    shown = st.config.show(url=st.url, mask=mask_url, password_of=url_password)
    if out.json:
        out.record(shown)
        return
    secret = f" (password: {shown['password']})" if "password" in shown else ""
    web, dash = shown["web"], shown["dash"]
    token = web["token"] + (f" (from {web['token_source']})" if "token_source" in web else "")
    out.text(f"config file: {shown['path'] or '(none)'}\n"
             f"default server: {shown['url']}{secret}\n"
             f"web: read_only {'yes' if web['read_only'] else 'no'}, token {token}\n"
             f"dash: read_only {'yes' if dash['read_only'] else 'no'}")
    out.table([{"field": k, "value": v} for k, v in shown["defaults"].items()],
              [Column("field"), Column("value", kind="words", drop=0)], title="defaults",
              show_header=False)
    rows: list[dict[str, Any]] = [{"queue": name, **entry}
                                  for name, entry in shown["queues"].items()]
    if rows:
        out.table(rows, QUEUE_COLUMNS, title="queues")
