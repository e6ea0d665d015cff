"""What a page of ``rq-cli web`` shows, as plain values for its templates: ages, times, the
history as an inline SVG (no JavaScript), an item's fields."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ..console.chart import zone as zone  # (the zone the pages' times are in)
from ..core.codes import Counter, ItemState
from ..core.contract.counts import WATCHED, column_kind
from ..core.contract.fields import PEEK, ItemField, carried
from ..output.render import BIDI
from ..output.shapes import peek_row

if TYPE_CHECKING:
    from ..console.chart import Chart
    from ..core.reports import PeekedItem

#: Items a page of a tab shows.
PAGE_SIZE = 50
#: Entries of the audit trail its page shows (the newest).
AUDIT_SHOWN = 200
#: Seconds between a view's reloads (its Refresh header: no script).
REFRESH_S = 10
#: An oldest pending item older than this (seconds) marks its queue as in trouble.
OLD_AFTER_S = 300.0
#: Where the one stylesheet is served (the CSP allows no inline style).
STYLESHEET_URL = "/static/console.css"
#: The stats row's count of leases that ran out (a Stats field, not a word of codes.py).
ABANDONED = "abandoned"
#: The overview's columns: (key of the stats row, title, kind): the counts the watch shows
#: (core/contract/counts.py WATCHED; kind ``column_kind``: a number, an age), then rates per second
#: (since the previous load).
OVERVIEW_COLUMNS = (
    *((c.name, c.heading or c.name, column_kind(c)) for c in WATCHED),
    (Counter.PUSHED.value, "in/s", "rate"),
    (Counter.COMPLETED.value, "done/s", "rate"), (Counter.FAILED.value, "failed/s", "rate"))
#: The overview's sort keys (its columns, and the name): largest first, as given if none.
SORTS = ("name", *(key for key, _, _ in OVERVIEW_COLUMNS))
#: The history a queue's history tab shows (seconds): the last 6 hours, per minute.
HISTORY_SHOWN = 6 * 3600
#: Control characters, shown as escapes in a row (and in an item's data: console/dataview.py).
_CONTROL = re.compile(f"[\\x00-\\x1f\\x7f-\\x9f{BIDI}]")
#: The history's series, in HISTORY_FIELDS' order: pushed, completed, failed, dead, then
#: what the history adds (a colour-blind-safe palette).
_COLOURS = ("#4878d0", "#6acc64", "#ee854a", "#d65f5f", "#956cb4", "#8c613c")


def sorted_rows(rows: Sequence[dict[str, Any]], sort: str) -> list[dict[str, Any]]:
    """The overview's rows sorted by ``sort`` (SORTS; "": as given): by name, else the
    largest first; a queue that cannot be read first, whatever the sort."""
    if sort == "name":
        return sorted(rows, key=lambda r: ("error" not in r, str(r.get("queue"))))
    if not sort:
        return sorted(rows, key=lambda r: "error" not in r)
    return sorted(rows, key=lambda r: ("error" not in r, -(_value(r, sort) or 0.0)))


def _value(row: dict[str, Any], key: str) -> float | None:
    """A column's figure of an overview row: a count or age, or a rate (None: not yet)."""
    if key in row:
        return row[key]  # type: ignore[no-any-return]
    return (row.get("rates") or {}).get(key)


def rate(row: dict[str, Any], key: str) -> str:
    """A rate per second of an overview row (``-`` until a second load measured it)."""
    value = _value(row, key)
    return "-" if value is None else f"{value:,.1f}"


def trouble(row: dict[str, Any]) -> list[str]:
    """Why a queue is in trouble, as the overview colours it: ``dead`` (dead items),
    ``abandoned`` (leases that ran out), ``old`` (the oldest pending item over
    OLD_AFTER_S), ``error`` (it cannot be read); none for a queue in good health."""
    if "error" in row:
        return ["error"]
    found = [k for k in (ItemState.DEAD.value, ABANDONED) if row.get(k)]
    if (row.get("oldest_pending_age_s") or 0) > OLD_AFTER_S:
        found.append("old")
    return found


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
    """An epoch time as local date and time with its zone (``-`` for none)."""
    return "-" if at is None else time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(at))


#: The per-item fields with a column (core/contract/fields.py), in a tab's table: those ``always``
#: there after attempts, the others before the data.
ITEM_COLUMNS = tuple(f for f in carried(PEEK) if f.column)


def cell(item: PeekedItem, field: ItemField) -> str:
    """An item's per-item field as a table cell: a time readable, nothing for none."""
    value = getattr(item, field.name)
    if field.kind == "time":
        return clock(value)
    return "" if value is None else str(value)


def timeline(item: PeekedItem) -> list[tuple[str, str, str]]:
    """What happened to an item, oldest first, as (time, what, detail): pushed, leased
    (each attempt), due, its lease's end, dead with its reason and last error. The queue
    keeps an item's attempt count and its last error, not each attempt's."""
    events: list[tuple[float, str, str]] = []
    enqueued = getattr(item, "enqueued_at", None)
    if enqueued is not None:
        events.append((enqueued, Counter.PUSHED.value, ""))
    if item.due_at is not None:
        events.append((item.due_at, "due", "delayed until then"))
    if item.lease_expires_at is not None:
        events.append((item.lease_expires_at, "lease ends",
                       f"attempt {item.attempts}, held by {item.lease_session or '?'}"))
    if item.dead_at is not None:
        events.append((item.dead_at, ItemState.DEAD.value, f"after {item.attempts} attempt"
                       f"{'' if item.attempts == 1 else 's'}, reason {item.dead_reason or '?'}"))
    error = getattr(item, "error", None)
    out = [(clock(at), what, detail) for at, what, detail in sorted(events)]
    if error:
        out.append(("", "last error", str(error)))
    return out


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
    last = len(chart.times) - 1
    x_ticks = [{"x": round(x(i), 1), "label": label,  # (the last label ends at its tick)
                "anchor": "end" if i == last and i else "middle"}
               for i, label in chart.x_ticks()]
    rows = [{"at": clock(at), **{f: f"{values[i]:,.0f}" for f, values in chart.series.items()}}
            for i, at in reversed(list(enumerate(chart.times)))]
    return {"width": width, "height": height, "left": left, "right": width - right,
            "top": top, "bottom": height - bottom, "lines": lines, "rows": rows,
            "fields": list(chart.series), "y_ticks": y_ticks, "x_ticks": x_ticks,
            "zone": chart.zone, "peak": chart.top}
