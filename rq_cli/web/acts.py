"""The confirmed actions of ``rq-cli web``: a GET that shows what will be done (the exact
count or the ids, and the equivalent command line) with a form that POSTs it; the POST does
at most that and redirects (303) to the page that says what was done, so a reload shows it
again and does nothing. Each is logged to stderr with who asked."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from ..console.actions import Action, Actions, run_action
from ..console.asks import ask_action
from ..console.model import Browser
from ..core.codes import STATES, Ask, ItemState
from ..core.operations.audit import By, trail
from . import views
from .guard import CONFIRMATION_FIELD
from .site import Refused, Web, name_of, read, templates, typed_filter

#: The actions, by the name their forms carry (and a worker's asks: Ask.DRAIN, Ask.STOP);
#: pause and resume each name their end state (never a toggle); requeue-ids and delete-ids
#: act on the dead items picked by id (``id`` fields), and on no other.
REQUEUE, PURGE, PAUSE, RESUME = "requeue", "purge", "pause", "resume"
REQUEUE_IDS, DELETE_IDS = "requeue-ids", "delete-ids"
#: What a confirmation's form carries: ``count`` is what the confirmation showed (JSON: a
#: number, or with no filter the count per shard prefix), the most the action does.
PARAMS = ("action", "filter", "state", "session", "count")
#: The most ids one action picks (a page of a tab).
MOST_IDS = views.PAGE_SIZE
_DEAD = ItemState.DEAD.value


def confirm_page(web: Web, request: Request, form: dict[str, str],
                 ctx: dict[str, Any]) -> Response:
    """What an action will do, with its exact count (or ids) and command line, and the
    form that does it."""
    name = name_of(request)
    params = {k: request.query_params.get(k, "") for k in PARAMS}
    ids = request.query_params.getlist("id")
    action = build(web, name, params, ids, confirming=True)
    params[CONFIRMATION_FIELD] = web.confirmations.issue()  # (done once at most)
    return templates.TemplateResponse(request, "confirm.html", {
        **ctx, "name": name, "action": action, "params": params, "ids": ids})


def do_page(web: Web, request: Request, form: dict[str, str],
            ctx: dict[str, Any]) -> Response:
    if request.method != "POST":
        raise Refused(405, "an action is a POST of its confirmation's form")
    name = name_of(request)
    params = {k: form.get(k, "") for k in PARAMS}
    action = build(web, name, params, ctx["ids"], confirming=False, who=ctx["who"])
    if not web.confirmations.take(form.get(CONFIRMATION_FIELD, "")):
        raise Refused(409, "this confirmation was done already (a reloaded or replayed "
                           "form), or is older than this rq-cli web or than an hour: open "
                           "the action again and confirm what it shows")
    target = web.target(name)
    with trail(target.queue, action.cli, by_of(web, request)):  # (the queue's audit trail)
        done = run_action(action, target.url)
    print(f"rq-cli web: {ctx['who']} asked: {action.cli} -> {done}", file=web.log, flush=True)
    key = web.remember({"name": name, "title": action.title, "cli": action.cli, "done": done})
    return RedirectResponse(views.queue_url(name, "done", key), status_code=303)


def by_of(web: Web, request: Request) -> By:
    """Where an action came from: the browser's address, the basic-auth user name, the
    token's label (bearer or basic; None without a token)."""
    who = web.guard.user(request.headers.get("authorization")) or ""
    token = None if web.guard.token is None else "bearer" if who == "bearer" else "basic"
    return By(request.client.host if request.client else "?",
              None if who in ("", "bearer") else who, token, "web")


def done_page(web: Web, request: Request, form: dict[str, str],
              ctx: dict[str, Any]) -> Response:
    """What an action did (where its POST redirected): shown again on a reload, done once."""
    done = web.done.get(request.path_params["key"])
    if done is None or done["name"] != name_of(request):
        raise Refused(404, "no such result (this rq-cli web keeps the last "
                           "few hundred, until it stops)")
    return templates.TemplateResponse(request, "done.html", {
        **ctx, **done, "failed": done["done"].startswith("failed:")})


def build(web: Web, name: str, params: dict[str, str], ids: list[str], *, confirming: bool,
          who: str = "") -> Action:
    """The action a form names. ``confirming``: its count is read now and put in
    ``params["count"]`` (the confirmation's form carries it); else (doing it) the count the
    form carries is the most it does: a form without one is refused. ``ids``: the items
    picked (requeue-ids, delete-ids: those and no other). ``who`` asks a worker."""
    if web.read_only:
        raise Refused(403, "this rq-cli web is read-only: it takes no actions")
    target = web.target(name)
    actions = Actions(name, target.queue, web.cli_prefix)
    kind = params["action"]
    if kind in (REQUEUE_IDS, DELETE_IDS):
        if not ids or len(ids) > MOST_IDS or len(set(ids)) != len(ids):
            raise Refused(400, f"pick 1 to {MOST_IDS} dead items, each once (the boxes of "
                               "the dead tab)")
        return actions.requeue_ids(ids) if kind == REQUEUE_IDS else actions.delete_ids(ids)
    browser = Browser(name, target.queue)
    flt, argv = typed_filter(params["filter"])
    if kind in (Ask.DRAIN, Ask.STOP):
        session = params["session"]
        holder = next((h for h in read(web, target, target.queue.holders)
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
                           f"{RESUME}, {Ask.DRAIN}, {Ask.STOP}, {REQUEUE_IDS}, {DELETE_IDS})")
    if confirming:
        counted = read(web, target, lambda: browser.confirmed(state) if flt is None
                       else actions.count_matching(state, flt))
        params["count"] = json.dumps(counted, separators=(",", ":"))
    confirmed = _confirmed(params["count"], per_shard=flt is None)
    if kind == REQUEUE:
        return actions.requeue_matching(flt, argv, confirmed)
    if isinstance(confirmed, dict):
        return actions.purge_state(state, confirmed)
    return actions.purge_matching(state, flt, argv, confirmed)


def _confirmed(text: str, *, per_shard: bool) -> dict[str, int] | int:
    """The count a confirmation's form carries (``PARAMS``): with ``per_shard`` a JSON
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
