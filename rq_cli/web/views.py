"""What a page of ``rq-cli web`` shows, as plain values for its templates: ages, times, the
history as an inline SVG (no JavaScript), an item's fields."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ..core.fields import PEEK, ItemField, carried
from ..core.keys import HISTORY_FIELDS
from ..output.render import BIDI
from ..output.shapes import peek_row

if TYPE_CHECKING:
    from ..core.history import Bucket
    from ..core.reports import PeekedItem

#: Items a page of a tab shows.
PAGE_SIZE = 50
#: The history a queue's history tab shows (seconds): the last 6 hours, per minute.
HISTORY_SHOWN = 6 * 3600
#: Control characters, shown as escapes in a row (and in an item's data: console/dataview.py).
_CONTROL = re.compile(f"[\\x00-\\x1f\\x7f-\\x9f{BIDI}]")
_COLOURS = ("#4878d0", "#6acc64", "#ee854a", "#d65f5f", "#956cb4")


def age(seconds: float | None) -> str:
    """A duration in the largest unit that fits (``-`` for none)."""
    if seconds is None:
        return "-"
    s = max(0.0, float(seconds))
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if s >= size:
            return f"{s / size:.1f}{unit}"
    return f"{s:.0f}s"


def snippet(data: bytes | None, size: int = 120) -> str:
    """The start of an item's data as text, for a row (the item's page shows it all),
    control characters as escapes."""
    if data is None:
        return ""
    text = _CONTROL.sub(lambda m: repr(m.group())[1:-1], data[:size].decode("utf-8", "replace"))
    return text + ("…" if len(data) > size else "")


#: The mark of an escaped path segment: a browser resolves ``.`` and ``..`` (and ``%2E``,
#: which the URL standard reads as a dot too) away, so a name or id ``.`` or ``..`` is
#: written ``~.`` or ``~..``, and one that starts with ``~`` gets a second; pages.RawNames
#: strips one.
SEGMENT_ESCAPE = "~"


def quoted(text: str) -> str:
    """``text`` as one segment of a URL's path (a ``/`` in an id escaped too; ``.``,
    ``..`` and a leading ``~`` escaped with SEGMENT_ESCAPE)."""
    segment = quote(text, safe="")
    if text in (".", "..") or text.startswith(SEGMENT_ESCAPE):
        return SEGMENT_ESCAPE + segment
    return segment


def queue_url(name: str, *rest: str) -> str:
    """The path of queue ``name``'s page, its name one segment (``/`` and every character
    but letters, digits and ``_.-~`` percent-encoded; pages.RawNames reads it back);
    ``rest``: the segments after it, as given."""
    return "/".join(("/q", quoted(name), *rest))


def clock(at: float | None) -> str:
    """An epoch time as local date and time (``-`` for none)."""
    return "-" if at is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


#: The per-item fields with a column (core/fields.py), in a tab's table: those ``always``
#: there after attempts, the others before the data.
ITEM_COLUMNS = tuple(f for f in carried(PEEK) if f.column)


def cell(item: PeekedItem, field: ItemField) -> str:
    """An item's per-item field as a table cell: a time readable, nothing for none."""
    value = getattr(item, field.name)
    if field.kind == "time":
        return clock(value)
    return "" if value is None else str(value)


def item_fields(item: PeekedItem) -> list[tuple[str, str]]:
    """An item's fields but its data, as (name, text), times readable."""
    out = []
    for key, value in peek_row(item).items():
        if key == "data":
            continue
        if key.endswith("_at") and isinstance(value, int | float):
            value = clock(value)
        out.append((key, "" if value is None else str(value)))
    return out


def history_chart(buckets: Sequence[Bucket], width: int = 720,
                  height: int = 120) -> dict[str, Any]:
    """Each counter of the history as a polyline of an SVG ``width`` x ``height``, all on one
    scale (the largest bucket), and the table's rows (newest first)."""
    top = max((v for b in buckets for v in b.deltas.values()), default=0) or 1
    n = max(len(buckets) - 1, 1)
    lines = []
    for field, colour in zip(HISTORY_FIELDS, _COLOURS, strict=False):
        points = " ".join(
            f"{i * width / n:.1f},{height - b.deltas.get(field, 0) * height / top:.1f}"
            for i, b in enumerate(buckets))
        lines.append({"field": field, "colour": colour, "points": points})
    rows = [{"at": clock(b.at), **b.deltas} for b in reversed(buckets)]
    return {"width": width, "height": height, "top": top, "lines": lines, "rows": rows,
            "fields": list(HISTORY_FIELDS)}
