"""What every page of ``rq-cli web`` needs: the queues and settings (:class:`Web`), the
templates, a refusal as a one-line page (:class:`Refused`), reads whose failure is a page,
the filter typed in a page, and the links between pages."""

from __future__ import annotations

import secrets
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response
from starlette.templating import Jinja2Templates

from ..console.actions import failure
from ..console.model import Overview, parse_filter
from ..errors import RqError
from ..ops.scrub import Secrets
from ..ops.targets import Target
from . import views
from .guard import Confirmations, Guard
from .paths import NAME_KEY

#: What was done, kept for the page a POST redirects to (303): the last this many.
DONE_KEPT = 200

templates = Jinja2Templates(directory=str(Path(__file__).with_name("templates")))
templates.env.globals.update(age=views.age, clock=views.clock, snippet=views.snippet,
                             quoted=views.quoted, cell=views.cell,
                             item_columns=views.ITEM_COLUMNS, queue_url=views.queue_url,
                             zone=views.zone)


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
        # the queues of one server are read in one pipeline (core/fleet/many.py): 200 queues
        # are a round trip (and INFO memory, and once a minute the history snapshots)
        self.overview = Overview(self.st, self.targets)
        self.lock = threading.Lock()  # (it keeps its last read, for the rates)
        self.by_name = {t.name: t for t in self.targets}
        self.done: OrderedDict[str, dict[str, Any]] = OrderedDict()  # (remember)
        self.done_lock = threading.Lock()

    def poll(self) -> list[dict[str, Any]]:
        """Every queue's overview row, in the order given."""
        with self.lock:
            return self.overview.poll()

    def remember(self, done: dict[str, Any]) -> str:
        """Keep what an action did for the page its POST redirects to; the key of that
        page (random: only who did it has the link)."""
        key = secrets.token_urlsafe(12)
        with self.done_lock:
            self.done[key] = done
            while len(self.done) > DONE_KEPT:
                self.done.popitem(last=False)
        return key

    def target(self, name: str) -> Target:
        found = self.by_name.get(name)
        if found is None:
            raise Refused(404, f"no such queue: {name}")
        return found


def error_page(request: Request, ctx: dict[str, Any], status: int, reason: str) -> Response:
    return templates.TemplateResponse(request, "error.html", {**ctx, "reason": reason},
                                      status_code=status)


def read(web: Web, target: Target, fn: Callable[[], Any]) -> Any:
    """``fn()``; a server's failure (an outage) as a 503 page with its reason, masked."""
    try:
        return fn()
    except RqError as exc:
        raise Refused(400, failure(exc, target.url)) from None
    except Exception as exc:  # the server gone: said, and the next request tries again
        raise Refused(503, failure(exc, target.url)) from None


def typed_filter(text: str) -> tuple[Any, list[str]]:
    try:
        return parse_filter(text)
    except RqError as exc:
        raise Refused(400, str(exc)) from None


def link(name: str, **params: Any) -> str:
    """The URL of a queue's page with ``params`` (empty ones left out)."""
    query = urlencode({k: v for k, v in params.items() if v not in (None, "", 0)})
    return views.queue_url(name) + (f"?{query}" if query else "")


def name_of(request: Request) -> str:
    """The queue name of a request's path, as :class:`~.paths.RawNames` read it."""
    return str(request.scope.get(NAME_KEY) or request.path_params["name"])
