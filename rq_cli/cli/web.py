"""``rq-cli web``: the console served to a browser (:mod:`rq_cli.web`, Starlette and
Uvicorn, the web extra)."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from ..core.contract.env import ENV_WEB_TOKEN
from ..errors import ServerError
from .common import OptQueuesArg, state
from .dash import global_options
from .inspect import DiscoverOpt, stats_targets

INSTALL_HINT = "pip install 'rqcli[web]'"


def web(
    ctx: typer.Context,
    queues: OptQueuesArg = None,
    discover: DiscoverOpt = False,
    bind: Annotated[str, typer.Option(
        "--bind", metavar="HOST:PORT",
        help="Where to listen. Loopback unless told; any other address needs a token "
             "($RQ_CLI_WEB_TOKEN or [web] token in the config).")] = "127.0.0.1:8325",
    allow_host: Annotated[list[str] | None, typer.Option(
        "--allow-host", metavar="NAME",
        help="A host name the browser may use for this console besides localhost and the "
             "--bind address (repeatable): any other Host header is refused (421), which "
             "stops DNS rebinding.")] = None,
    read_only: Annotated[bool, typer.Option(
        "--read-only", help="Hide and refuse every action: look, never touch (also "
                            "read_only = true in the config's [web] table).")] = False,
) -> None:
    """The console in a browser: every queue, its items page by page, and repairs.

    Server-rendered pages: the overview of every queue (a queue in trouble in colour,
    sortable, with rates; it reloads itself); a queue's tabs (pending, processing, delayed,
    dead, holders, error groups, history with labelled axes) with the CLI's filters; an
    item with its timeline; and the actions (requeue dead items, purge, pause and resume,
    requeue or delete dead items picked by id, ask a holder's worker to drain or stop),
    each confirmed with its exact count or ids and its equivalent command line, then logged
    to stderr with who asked and recorded in the queue's audit trail (rq-cli audit); a POST
    redirects (303) to what it did. Listens on 127.0.0.1 unless told. Once a token is set
    ($RQ_CLI_WEB_TOKEN or [web] token, never an option), every request needs it:
    Authorization: Bearer TOKEN, or
    as the password of basic auth; beyond loopback the token must be 16 characters or
    more. Answers only its own host names (localhost, the --bind address, --allow-host),
    takes actions only from its own pages (Origin), and runs no script (a
    Content-Security-Policy). Needs the web extra (pip install 'rqcli[web]').

    Example: rq-cli web emails thumbnails --bind 127.0.0.1:8325
    """
    st = state(ctx)
    try:
        from ..web.guard import Guard
        from ..web.pages import Web, make_app
        from ..web.serve import allowed_hosts, check_bind, is_wildcard, parse_bind, serve
    except ImportError as exc:
        raise ServerError(f"rq-cli web needs Starlette and Uvicorn ({exc.name or exc} is not "
                          f"installed): {INSTALL_HINT}") from None
    host, port = parse_bind(bind)
    token = os.environ.get(ENV_WEB_TOKEN) or st.config.web_token or None
    check_bind(host, token)
    if token:
        st.secrets.append(token)
    targets = stats_targets(st, queues or [], discover)
    read_only = read_only or st.config.web_read_only
    guard = Guard(token, hosts=allowed_hosts(host, allow_host or []),
                  any_address=is_wildcard(host))
    app = make_app(Web(targets, guard=guard, cli_prefix=global_options(st), st=st,
                       read_only=read_only))
    shown = f"[{host}]" if ":" in host else host
    queues_word = "queue" if len(targets) == 1 else "queues"
    serve(app, host, port, f"rq-cli web: http://{shown}:{port}/ ({len(targets)} "
                           f"{queues_word}{', read-only' if read_only else ''}; Ctrl-C stops)")
