"""What a page of ``rq-cli web`` shows, as plain values for its templates: ages, times, the
history as an inline SVG (no JavaScript), an item's fields."""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ..core.fields import PEEK, ItemField, carried
from ..output.render import BIDI
from ..output.shapes import peek_row

if TYPE_CHECKING:
    from ..console.chart import Chart
    from ..core.reports import PeekedItem

#: Items a page of a tab shows.
PAGE_SIZE = 50
#: The history a queue's history tab shows (seconds): the last 6 hours, per minute.
HISTORY_SHOWN = 6 * 3600
#: Control characters, shown as escapes in a row (and in an item's data: console/dataview.py).
_CONTROL = re.compile(f"[\\x00-\\x1f\\x7f-\\x9f{BIDI}]")
#: The history's series, in HISTORY_FIELDS' order: pushed, completed, failed, dead, then
#: what the history adds (a colour-blind-safe palette).
_COLOURS = ("#4878d0", "#6acc64", "#ee854a", "#d65f5f", "#956cb4", "#8c613c")


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


def history_chart(chart: Chart, width: int = 720, height: int = 220) -> dict[str, Any]:
    """The history's chart (:mod:`rq_cli.console.chart`) as an SVG ``width`` x ``height``:
    the count axis on the left with its labels and grid lines, the time axis below with
    its labels (local time, the zone said), a polyline per counter, and the table's rows
    (newest first)."""
    left, right, top, bottom = 56, 12, 12, 30
    plot_w, plot_h = width - left - right, height - top - bottom
    n = max(len(chart.times) - 1, 1)

    def x(i: int) -> float:
        return left + i * plot_w / n

    def y(v: float) -> float:
        return top + plot_h - v * plot_h / chart.top

    lines = []
    for field, colour in zip(chart.series, _COLOURS, strict=False):
        points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(chart.series[field]))
        lines.append({"field": field, "colour": colour, "points": points,
                      "last": f"{chart.last(field):,.0f}"})
    y_ticks = [{"y": round(y(v), 1), "label": label} for v, label in chart.y_ticks()]
    x_ticks = [{"x": round(x(i), 1), "label": label} for i, label in chart.x_ticks()]
    rows = [{"at": clock(at), **{f: f"{values[i]:,.0f}" for f, values in chart.series.items()}}
            for i, at in reversed(list(enumerate(chart.times)))]
    return {"width": width, "height": height, "left": left, "right": width - right,
            "top": top, "bottom": height - bottom, "lines": lines, "rows": rows,
            "fields": list(chart.series), "y_ticks": y_ticks, "x_ticks": x_ticks,
            "zone": chart.zone, "peak": chart.top}
