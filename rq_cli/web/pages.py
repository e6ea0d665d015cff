"""The pages of ``rq-cli web``: the overview, a queue's tabs, an item, and the confirmed
actions (requeue dead items, purge, pause and resume), over the terminal console's model
(:mod:`rq_cli.dash.model`): the same bounded reads, the same actions and command lines.

Every page is server-rendered HTML (Jinja2, escaped); actions are a GET that shows what will
be done (the exact count and the equivalent command line) and a form that POSTs it with the
CSRF token (:mod:`.guard`). Read-only, the actions are neither shown nor done (403). Each
action is logged to stderr with who asked: the basic-auth user or the client's address.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from ..core.codes import STATES, Ask, ItemState
from ..core.errgroups import group_errors
from ..core.history import read_history
from ..dash.asks import ask_action
from ..dash.model import (
    Action,
    Actions,
    Browser,
    Overview,
    data_view,
    failure,
    parse_filter,
    run_action,
)
from ..errors import RqError
from ..ops.scrub import Secrets
from ..ops.targets import Target
from . import views
from .guard import (
    CONFIRMATION_FIELD,
    CSRF_FIELD,
    REALM,
    SESSION_COOKIE,
    Confirmations,
    Guard,
    csp,
    new_session,
)
from .paths import ITEM_KEY, NAME_KEY, RawNames

#: A queue's tabs: its states, who holds its leases, its error groups, its history, its
#: batches (docs/batches.md).
HOLDERS, GROUPS, HISTORY, BATCHES = "holders", "errors", "history", "batches"
TABS = (*STATES, HOLDERS, GROUPS, HISTORY, BATCHES)
#: The actions, by the name their forms carry (and a worker's asks: Ask.DRAIN, Ask.STOP);
#: pause and resume each name their end state (never a toggle).
REQUEUE, PURGE, PAUSE, RESUME = "requeue", "purge", "pause", "resume"
#: What a confirmation's form carries: ``count`` is what the confirmation showed (JSON: a
#: number, or with no filter the count per shard prefix), the most the action does.
_PARAMS = ("action", "filter", "state", "session", "count")
_DEAD = ItemState.DEAD.value

_templates = Jinja2Templates(directory=str(Path(__file__).with_name("templates")))
_templates.env.globals.update(age=views.age, clock=views.clock, snippet=views.snippet,
                              quoted=views.quoted, cell=views.cell,
                              item_columns=views.ITEM_COLUMNS, queue_url=views.queue_url)


class Refused(Exception):
    """A request answered with ``status`` and a one-line reason."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


@dataclass
class Web:
    """What every page needs: the queues, the guard, whether actions are off, the global
    options of the command lines shown, where actions are logged."""

    targets: Sequence[Target]
    guard: Guard = field(default_factory=Guard)
    read_only: bool = False
    cli_prefix: Sequence[str] = ()
    st: Secrets | None = None
    log: TextIO = field(default_factory=lambda: sys.stderr)
    confirmations: Confirmations = field(default_factory=Confirmations)

    def __post_init__(self) -> None:
        # the queues of one server are read in one pipeline (core/many.py): 200 queues
        # are a round trip (and INFO memory, and once a minute the history snapshots)
        self.overview = Overview(self.st, self.targets)
        self.lock = threading.Lock()  # (it keeps its last read, for the rates)
        self.by_name = {t.name: t for t in self.targets}

    def poll(self) -> list[dict[str, Any]]:
        """Every queue's overview row, in the order given."""
        with self.lock:
            return self.overview.poll()

    def target(self, name: str) -> Target:
        found = self.by_name.get(name)
        if found is None:
            raise Refused(404, f"no such queue: {name}")
        return found


Page = Callable[[Web, Request, dict[str, str], dict[str, Any]], Response]


def make_app(web: Web) -> Any:
    """The app: each route guarded (token, session cookie, CSRF for POSTs), behind
    :class:`RawNames`."""
    def route(path: str, page: Page, methods: tuple[str, ...] = ("GET",)) -> Route:
        return Route(path, _guarded(web, page), methods=list(methods))
    return RawNames(Starlette(routes=[
        route("/", overview_page),
        route("/q/{name}", queue_page),
        route("/q/{name}/item/{item_id:path}", item_page),
        route("/q/{name}/confirm", confirm_page),
        route("/q/{name}/do", do_page, ("GET", "POST")),  # (GET: the token, then 405)
        # anything else: the token first (every request needs it), then 404
        route("/{rest:path}", not_found, ("GET", "POST", "HEAD", "PUT", "DELETE", "PATCH")),
    ]))


def _name(request: Request) -> str:
    return str(request.scope.get(NAME_KEY) or request.path_params["name"])


def _guarded(web: Web, page: Page) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        nonce = new_session()
        response = await _answer(web, page, request, nonce)
        response.headers["Content-Security-Policy"] = csp(nonce)
        response.headers["Cache-Control"] = "no-store"
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "same-origin"
        return response
    return endpoint


async def _answer(web: Web, page: Page, request: Request, nonce: str) -> Response:
    """The answer to a request: none for another host's name (421), none without the token
    (401), no action for a POST from another site or without its CSRF token (403)."""
    host = request.headers.get("host")
    if not web.guard.host_ok(host):
        return PlainTextResponse("421: this rq-cli web does not answer to that host name "
                                 "(start it with --allow-host NAME to add one)\n", 421)
    who = web.guard.user(request.headers.get("authorization"))
    if who is None:
        return PlainTextResponse("401: this rq-cli web needs its token (bearer, or as "
                                 "the password of basic auth)\n", 401,
                                 {"WWW-Authenticate": REALM})
    session = request.cookies.get(SESSION_COOKIE)
    fresh = session is None
    session = session or new_session()
    form: dict[str, str] = {}
    if request.method == "POST":
        if not web.guard.origin_ok(request.headers.get("origin"), host,
                                   request.headers.get("sec-fetch-site")):
            return PlainTextResponse("403: an action is a form of this console's own pages, "
                                     "not of another site\n", 403)
        form = {k: str(v) for k, v in (await request.form()).items()}
        if not web.guard.csrf_ok(None if fresh else session, form.get(CSRF_FIELD)):
            return PlainTextResponse("403: no valid CSRF token (reload the page and "
                                     "confirm again)\n", 403)
    client = request.client.host if request.client else "?"
    ctx = {"csrf": web.guard.csrf(session), "read_only": web.read_only, "nonce": nonce,
           "who": f"{who}@{client}" if who else client, "csrf_field": CSRF_FIELD}
    try:
        response = await run_in_threadpool(page, web, request, form, ctx)
    except Refused as exc:
        response = _error(request, ctx, exc.status, str(exc))
    if fresh:
        response.set_cookie(SESSION_COOKIE, session, httponly=True, samesite="strict")
    return response


def _error(request: Request, ctx: dict[str, Any], status: int, reason: str) -> Response:
    return _templates.TemplateResponse(request, "error.html", {**ctx, "reason": reason},
                                       status_code=status)


def _read(web: Web, target: Target, fn: Callable[[], Any]) -> Any:
    """``fn()``; a server's failure (an outage) as a 503 page with its reason, masked."""
    try:
        return fn()
    except RqError as exc:
        raise Refused(400, failure(exc, target.url)) from None
    except Exception as exc:  # the server gone: said, and the next request tries again
        raise Refused(503, failure(exc, target.url)) from None


# -- the pages -------------------------------------------------------------------------------
def not_found(web: Web, request: Request, form: dict[str, str],
              ctx: dict[str, Any]) -> Response:
    raise Refused(404, f"no such page: {request.url.path}")


def overview_page(web: Web, request: Request, form: dict[str, str],
                  ctx: dict[str, Any]) -> Response:
    rows = web.poll()
    return _templates.TemplateResponse(request, "overview.html", {
        **ctx, "rows": rows, "states": STATES})


def queue_page(web: Web, request: Request, form: dict[str, str],
               ctx: dict[str, Any]) -> Response:
    q = request.query_params
    name = _name(request)
    target = web.target(name)
    tab = q.get("tab") or ItemState.PENDING.value
    if tab not in TABS:
        raise Refused(404, f"no such tab: {tab} (one of {', '.join(TABS)})")
    text = q.get("filter", "")
    try:
        offset = max(0, int(q.get("offset") or 0))
    except ValueError:
        raise Refused(400, "offset must be a number") from None
    browser = Browser(name, target.queue)
    flt, argv = _filter(text)
    counts = _read(web, target, browser.counts)
    page: dict[str, Any] = {}
    if tab in STATES:
        got = _read(web, target, lambda: browser.page(
            tab, offset, views.PAGE_SIZE, total=browser.total(tab, counts), flt=flt))
        page = {"items": got.rows, "offset": offset, "total": got.total, "more": got.more,
                "next": offset + views.PAGE_SIZE, "prev": max(0, offset - views.PAGE_SIZE)}
    elif tab == HOLDERS:
        page = {"holders": _read(web, target, target.queue.holders)}
    elif tab == BATCHES:  # (the newest ones, with their progress)
        from ..core.batchops import listed

        page = {"batches": _read(web, target, lambda: listed(target.queue, views.PAGE_SIZE))}
    elif tab == GROUPS:
        report = _read(web, target, lambda: group_errors(target.queue, flt))
        page = {"groups": report.groups, "scanned": report.scanned}
    else:
        buckets = _read(web, target, lambda: read_history(target.queue, views.HISTORY_SHOWN))
        page = {"chart": views.history_chart(buckets)}
    return _templates.TemplateResponse(request, "queue.html", {
        **ctx, "name": name, "tab": tab, "tabs": TABS, "counts": counts, "filter": text,
        "argv": argv, "dead": _DEAD, "states": STATES, "link": _link, "asks": list(Ask),
        **page})


def item_page(web: Web, request: Request, form: dict[str, str],
              ctx: dict[str, Any]) -> Response:
    name = _name(request)
    item_id = str(request.scope.get(ITEM_KEY) or request.path_params["item_id"])
    target = web.target(name)
    item = _read(web, target, lambda: Browser(name, target.queue).item(item_id))
    if item is None:
        raise Refused(404, f"no item {item_id} in {name}")
    kind, text = data_view(item.data)
    return _templates.TemplateResponse(request, "item.html", {
        **ctx, "name": name, "item": item, "fields": views.item_fields(item), "kind": kind,
        "text": text})


def confirm_page(web: Web, request: Request, form: dict[str, str],
                 ctx: dict[str, Any]) -> Response:
    """What an action will do, with its exact count and command line, and the form that
    does it."""
    name = _name(request)
    params = {k: request.query_params.get(k, "") for k in _PARAMS}
    action = _action(web, name, params, confirming=True)
    params[CONFIRMATION_FIELD] = web.confirmations.issue()  # (done once at most)
    return _templates.TemplateResponse(request, "confirm.html", {
        **ctx, "name": name, "action": action, "params": params})


def do_page(web: Web, request: Request, form: dict[str, str],
            ctx: dict[str, Any]) -> Response:
    if request.method != "POST":
        raise Refused(405, "an action is a POST of its confirmation's form")
    name = _name(request)
    params = {k: form.get(k, "") for k in _PARAMS}
    action = _action(web, name, params, confirming=False, who=ctx["who"])
    if not web.confirmations.take(form.get(CONFIRMATION_FIELD, "")):
        raise Refused(409, "this confirmation was done already (a reloaded or replayed "
                           "form), or is older than this rq-cli web or than an hour: open "
                           "the action again and confirm what it shows")
    target = web.target(name)
    done = run_action(action, target.url)
    print(f"rq-cli web: {ctx['who']} asked: {action.cli} -> {done}", file=web.log, flush=True)
    return _templates.TemplateResponse(request, "done.html", {
        **ctx, "name": name, "action": action, "done": done,
        "failed": done.startswith("failed:")})


def _filter(text: str) -> tuple[Any, list[str]]:
    try:
        return parse_filter(text)
    except RqError as exc:
        raise Refused(400, str(exc)) from None


def _action(web: Web, name: str, params: dict[str, str], *, confirming: bool,
            who: str = "") -> Action:
    """The action a form names. ``confirming``: its count is read now and put in
    ``params["count"]`` (the confirmation's form carries it); else (doing it) the count the
    form carries is the most it does: a form without one is refused. ``who`` asks a worker
    (the asker it is told)."""
    if web.read_only:
        raise Refused(403, "this rq-cli web is read-only: it takes no actions")
    target = web.target(name)
    actions = Actions(name, target.queue, web.cli_prefix)
    browser = Browser(name, target.queue)
    flt, argv = _filter(params["filter"])
    kind = params["action"]
    if kind in (Ask.DRAIN, Ask.STOP):
        session = params["session"]
        holder = next((h for h in _read(web, target, target.queue.holders)
                       if h.session == session and session), None)
        if holder is None:
            raise Refused(404, f"no worker session {session!r} holds items of {name}")
        return ask_action(name, target.queue, holder, Ask(kind), who)
    if kind in (PAUSE, RESUME):
        return actions.pause(kind == PAUSE)
    if kind == PURGE:
        state = params["state"]
        if state not in STATES:
            raise Refused(400, f"purge needs a state: one of {', '.join(STATES)}")
    elif kind == REQUEUE:
        state = _DEAD
    else:
        raise Refused(400, f"no such action: {kind!r} (one of {REQUEUE}, {PURGE}, {PAUSE}, "
                           f"{RESUME}, {Ask.DRAIN}, {Ask.STOP})")
    if confirming:
        counted = _read(web, target, lambda: browser.confirmed(state) if flt is None
                        else actions.count_matching(state, flt))
        params["count"] = json.dumps(counted, separators=(",", ":"))
    confirmed = _confirmed(params["count"], per_shard=flt is None)
    if kind == REQUEUE:
        return actions.requeue_matching(flt, argv, confirmed)
    if isinstance(confirmed, dict):
        return actions.purge_state(state, confirmed)
    return actions.purge_matching(state, flt, argv, confirmed)


def _confirmed(text: str, *, per_shard: bool) -> dict[str, int] | int:
    """The count a confirmation's form carries (``_PARAMS``): with ``per_shard`` a JSON
    object of prefix to count, else a JSON number; anything else is refused (400): a form
    from before counts were carried, or one made by hand, does nothing."""
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if per_shard and isinstance(value, dict) and all(
            isinstance(k, str) and type(v) is int and v >= 0 for k, v in value.items()):
        return value
    if not per_shard and type(value) is int and value >= 0:
        return value
    raise Refused(400, "this form carries no confirmed count (a stale page?): open the "
                       "action again and confirm the count it shows")


def _link(name: str, **params: Any) -> str:
    """The URL of a queue's page with ``params`` (empty ones left out)."""
    query = urlencode({k: v for k, v in params.items() if v not in (None, "", 0)})
    return views.queue_url(name) + (f"?{query}" if query else "")
