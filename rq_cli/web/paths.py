"""The paths of ``rq-cli web``: queue names and item ids read from the raw path (any
name or id, one segment each; :func:`.views.quoted` writes them)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_to_bytes

from . import views

if TYPE_CHECKING:
    from starlette.applications import Starlette

#: Where :class:`RawNames` leaves a queue's name and an item's id in the request's scope.
NAME_KEY, ITEM_KEY = "rq_cli_queue_name", "rq_cli_item_id"


class RawNames:
    """Queue names and item ids read from the request's raw path, one percent-decoding.

    A queue may be named ``a/b``, ``50%``, ``why?``, ``#1``, ``..``, with spaces or
    non-ASCII letters; its links carry it as one segment, every character but letters and
    digits percent-encoded, ``.`` and ``..`` escaped (:func:`.views.quoted`). The ASGI
    server decodes the path before routing, so the ``/`` of ``a%2Fb`` would split the
    segment (and Starlette's TestClient decodes it twice): this wrapper takes
    ``/q/SEGMENT`` and the item id after ``/item/`` from the raw path instead, and routes
    on a placeholder segment."""

    def __init__(self, app: Starlette) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        raw = scope.get("raw_path") if scope["type"] == "http" else None
        if raw:
            parts = bytes(raw).split(b"?", 1)[0].split(b"/")
            if len(parts) >= 3 and parts[1] == b"q" and parts[2]:
                scope = dict(scope)
                scope[NAME_KEY] = decoded(parts[2])
                rest = parts[3:]
                if len(rest) >= 2 and rest[0] == b"item":
                    scope[ITEM_KEY] = decoded(b"/".join(rest[1:]))
                scope["path"] = "/q/-" + "".join("/" + decoded(p).replace("/", "-")
                                                  for p in rest[:2])
        await self.app(scope, receive, send)


def decoded(segment: bytes) -> str:
    """A name or id of the path as :func:`.views.quoted` wrote it."""
    if segment.startswith(views.SEGMENT_ESCAPE.encode()):
        segment = segment[1:]
    return unquote_to_bytes(segment).decode("utf-8", "replace")
