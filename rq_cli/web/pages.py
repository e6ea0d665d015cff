"""The pages of ``rq-cli web``: the overview, a queue's tabs, an item, and the stylesheet,
over the console model both consoles share (:mod:`rq_cli.console`): the same bounded reads,
the same actions and command lines (the confirmed actions: :mod:`.acts`).

Every page is server-rendered HTML (Jinja2, escaped) with no script; the overview and a
queue's tabs refresh themselves (a ``Refresh`` header); styles are one served stylesheet
(the CSP allows no other). Read-only, the actions are neither shown nor done (403).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from ..console.chart import chart
from ..console.model import Browser, data_view
from ..core.codes import STATES, Ask, ItemState
from ..core.errgroups import group_errors
from ..core.history import read_history
from ..core.operations.audit import read_audit
from . import views
from .acts import DELETE_IDS, MOST_IDS, REQUEUE_IDS, confirm_page, do_page, done_page
from .guard import CSRF_FIELD, REALM, SESSION_COOKIE, csp, new_session
from .paths import ITEM_KEY, RawNames
from .site import Refused, Web, error_page, link, name_of, read, templates, typed_filter

__all__ = ["Web", "make_app"]

#: A queue's tabs: its states, who holds its leases, its error groups, its history, its
#: batches (docs/batches.md).
HOLDERS, GROUPS, HISTORY, BATCHES = "holders", "errors", "history", "batches"
TABS = (*STATES, HOLDERS, GROUPS, HISTORY, BATCHES)
_DEAD = ItemState.DEAD.value
#: The stylesheet, served at STYLESHEET_URL (the only styles the CSP lets a page use).
_STYLESHEET = (Path(__file__).with_name("static") / "console.css").read_bytes()

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
        route("/q/{name}/audit", audit_page),
        route("/q/{name}/done/{key}", done_page),
        route(views.STYLESHEET_URL, stylesheet),
        # anything else: the token first (every request needs it), then 404
        route("/{rest:path}", not_found, ("GET", "POST", "HEAD", "PUT", "DELETE", "PATCH")),
    ]))


def _guarded(web: Web, page: Page) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        response = await _answer(web, page, request)
        response.headers["Content-Security-Policy"] = csp()
        response.headers["Cache-Control"] = "no-store"
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "same-origin"
        return response
    return endpoint


async def _answer(web: Web, page: Page, request: Request) -> Response:
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
    ids: list[str] = []
    if request.method == "POST":
        if not web.guard.origin_ok(request.headers.get("origin"), host,
                                   request.headers.get("sec-fetch-site")):
            return PlainTextResponse("403: an action is a form of this console's own pages, "
                                     "not of another site\n", 403)
        posted = await request.form()
        form = {k: str(v) for k, v in posted.items()}
        ids = [str(v) for v in posted.getlist("id")]  # (the items picked, each an id field)
        if not web.guard.csrf_ok(None if fresh else session, form.get(CSRF_FIELD)):
            return PlainTextResponse("403: no valid CSRF token (reload the page and "
                                     "confirm again)\n", 403)
    client = request.client.host if request.client else "?"
    ctx = {"csrf": web.guard.csrf(session), "read_only": web.read_only,
           "who": f"{who}@{client}" if who else client, "csrf_field": CSRF_FIELD,
           "ids": ids, "stylesheet": views.STYLESHEET_URL}
    try:
        response = await run_in_threadpool(page, web, request, form, ctx)
    except Refused as exc:
        response = error_page(request, ctx, exc.status, str(exc))
    if fresh:
        response.set_cookie(SESSION_COOKIE, session, httponly=True, samesite="strict")
    return response


# -- the pages -------------------------------------------------------------------------------
def not_found(web: Web, request: Request, form: dict[str, str],
              ctx: dict[str, Any]) -> Response:
    raise Refused(404, f"no such page: {request.url.path}")


def stylesheet(web: Web, request: Request, form: dict[str, str],
               ctx: dict[str, Any]) -> Response:
    return Response(_STYLESHEET, media_type="text/css")


def overview_page(web: Web, request: Request, form: dict[str, str],
                  ctx: dict[str, Any]) -> Response:
    sort = request.query_params.get("sort") or ""
    if sort and sort not in views.SORTS:
        raise Refused(400, f"sort by one of {', '.join(views.SORTS)}")
    rows = views.sorted_rows(web.poll(), sort)
    return _refreshed(templates.TemplateResponse(request, "overview.html", {
        **ctx, "rows": rows, "columns": views.OVERVIEW_COLUMNS, "sort": sort,
        "trouble": views.trouble, "rate": views.rate, "refresh": views.REFRESH_S,
        "old_after": views.OLD_AFTER_S}))


def queue_page(web: Web, request: Request, form: dict[str, str],
               ctx: dict[str, Any]) -> Response:
    q = request.query_params
    name = name_of(request)
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
    flt, argv = typed_filter(text)
    counts = read(web, target, browser.counts)
    page: dict[str, Any] = {}
    if tab in STATES:
        got = read(web, target, lambda: browser.page(
            tab, offset, views.PAGE_SIZE, total=browser.total(tab, counts), flt=flt))
        page = {"items": got.rows, "offset": offset, "total": got.total, "more": got.more,
                "next": offset + views.PAGE_SIZE, "prev": max(0, offset - views.PAGE_SIZE)}
    elif tab == HOLDERS:
        page = {"holders": read(web, target, target.queue.holders)}
    elif tab == BATCHES:  # (the newest ones, with their progress)
        page = {"batches": read(web, target, lambda: browser.batches(views.PAGE_SIZE))}
    elif tab == GROUPS:
        report = read(web, target, lambda: group_errors(target.queue, flt))
        page = {"groups": report.groups, "scanned": report.scanned}
    else:
        buckets = read(web, target, lambda: read_history(target.queue, views.HISTORY_SHOWN))
        page = {"chart": views.history_chart(chart(buckets))}
    refresh = tab != _DEAD or web.read_only  # (not while items are picked by hand)
    answer = templates.TemplateResponse(request, "queue.html", {
        **ctx, "name": name, "tab": tab, "tabs": TABS, "counts": counts, "filter": text,
        "argv": argv, "dead": _DEAD, "states": STATES, "link": link, "asks": list(Ask),
        "requeue_ids": REQUEUE_IDS, "delete_ids": DELETE_IDS, "most_ids": MOST_IDS,
        "refresh": views.REFRESH_S if refresh else 0, **page})
    return _refreshed(answer) if refresh else answer


def item_page(web: Web, request: Request, form: dict[str, str],
              ctx: dict[str, Any]) -> Response:
    name = name_of(request)
    item_id = str(request.scope.get(ITEM_KEY) or request.path_params["item_id"])
    target = web.target(name)
    item = read(web, target, lambda: Browser(name, target.queue).item(item_id))
    if item is None:
        raise Refused(404, f"no item {item_id} in {name}")
    kind, text = data_view(item.data)
    return templates.TemplateResponse(request, "item.html", {
        **ctx, "name": name, "item": item, "fields": views.item_fields(item), "kind": kind,
        "text": text, "timeline": views.timeline(item), "dead": _DEAD,
        "requeue_ids": REQUEUE_IDS, "delete_ids": DELETE_IDS})


def audit_page(web: Web, request: Request, form: dict[str, str],
               ctx: dict[str, Any]) -> Response:
    """The queue's audit trail (core/operations/audit.py): its newest repairs, from any console or
    CLI."""
    name = name_of(request)
    target = web.target(name)
    entries = read(web, target, lambda: read_audit(target.queue, views.AUDIT_SHOWN))
    return templates.TemplateResponse(request, "audit.html", {
        **ctx, "name": name, "entries": entries})


def _refreshed(response: Response) -> Response:
    """``response`` reloaded by the browser every REFRESH_S seconds (no script): a view
    that follows the queue; a confirmation never is (it shows what was read)."""
    response.headers["Refresh"] = str(views.REFRESH_S)
    return response


