"""The rows of a queue's tabs, without Textual's widgets: each tab's columns, the cells of
one item, holder or remembered id, and how the columns give way on a narrow terminal."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from rich.text import Text

from ..core.codes import ItemState
from ..output.render import escape_control, human, human_duration, human_time
from .layout import Fit, cut, fit_columns

if TYPE_CHECKING:
    from ..core.errgroups import ErrorGroup
    from ..core.reports import Holder, PeekedItem

#: The columns of each tab (the first: the selection mark).
TAB_COLUMNS: dict[str, tuple[str, ...]] = {
    "pending": ("", "id", "attempts", "waiting", "tenant", "data"),
    "processing": ("", "id", "attempts", "lease", "holder", "data"),
    "delayed": ("", "id", "attempts", "due", "data"),
    "dead": ("", "id", "attempts", "dead for", "reason", "error", "data"),
    "holders": ("", "session", "host", "pid", "items", "live", "abandoned", "next deadline"),
    "dedup": ("", "id", "forgotten in"),
    "errors": ("", "group", "state", "items", "last", "error"),
}
#: How each tab's columns give way on a narrow terminal: the error and the data get the
#: room; attempts, reasons and the like are dropped first, a long id is cut.
TAB_FITS: dict[str, Fit] = {
    "pending": Fit({"data": (20, 1)}, ("attempts", "tenant", ("id", 14), "waiting")),
    "processing": Fit({"holder": (12, 1), "data": (20, 2)}, ("attempts", ("id", 14))),
    "delayed": Fit({"data": (20, 1)}, ("attempts", ("id", 14))),
    "dead": Fit({"error": (30, 3), "data": (20, 2)},
                ("attempts", "reason", ("id", 14), "dead for")),
    "holders": Fit({"session": (12, 1)}, ("pid", "live", "host")),
    "dedup": Fit({"id": (12, 1)}),
    "errors": Fit({"error": (30, 1)}, ("last", "state")),
}
#: A cell's text is kept to this many characters before it is fitted (the item view shows
#: the whole of it).
CELL_CHARS = 300


def item_cells(tab: str, row: Any, now: float) -> list[Any]:
    """The cells of one row of ``tab`` (after the selection mark)."""
    if tab == "holders":
        h: Holder = row
        return [h.session or "(nobody known)", h.host or "-", h.pid or "-", h.items, h.live,
                Text(str(h.abandoned), style="bold red" if h.abandoned else ""),
                human_time(h.nearest_deadline, now)]
    if tab == "dedup":
        item_id, _, left = row
        return [item_id, human_duration(left)]
    if tab == "errors":
        g: ErrorGroup = row
        return [g.key, g.state, Text(f"{g.count:,}", justify="right"),
                human_time(g.last_at, now) if g.last_at is not None else "-",
                human(g.error)[:CELL_CHARS]]
    it: PeekedItem = row
    data = human(it.data, "data")[:CELL_CHARS]
    if tab == ItemState.PENDING:
        waited = None if it.enqueued_at is None else now - it.enqueued_at
        return [it.id, it.attempts, human_duration(waited), it.tenant or "-", data]
    if tab == ItemState.PROCESSING:
        lease = (Text("abandoned", style="bold red") if it.abandoned else
                 human_duration(None if it.lease_expires_at is None
                                else it.lease_expires_at - now))
        return [it.id, it.attempts, lease, it.lease_session or "-", data]
    if tab == ItemState.DELAYED:
        return [it.id, it.attempts, human_time(it.due_at, now), data]
    dead_for = None if it.dead_at is None else now - it.dead_at
    return [it.id, it.attempts, human_duration(dead_for), it.dead_reason or "-",
            human(it.error)[:CELL_CHARS], data]


def cell_width(cell: Any) -> int:
    return cell.cell_len if isinstance(cell, Text) else len(str(cell))


def fitted(cell: Any, width: int) -> Text:
    """``cell`` cut to ``width`` columns, an ellipsis where cut: always a ``Text`` (a plain
    ``str`` cell is read as markup by the DataTable: ``[/tmp/x]`` in a payload would be a
    closing tag), control and bidi characters as escapes."""
    if isinstance(cell, Text):
        if cell.cell_len <= width:
            return cell
        out = cell.copy()
        out.truncate(width, overflow="ellipsis")
        return out
    return Text(cut(escape_control(str(cell)), width))


def row_key(tab: str, row: Any) -> str:
    if tab == "holders":
        return str(row.session)
    if tab == "dedup":
        return str(row[0])
    if tab == "errors":
        return f"{row.state}:{row.key}"
    return str(row.id)


def fit_rows(tab: str, rows: Sequence[Any], selected: Collection[str], now: float,
             width: int) -> tuple[dict[str, int], list[tuple[str, list[Any]]]]:
    """The columns of ``tab`` fitted to ``width`` (title -> width, the dropped ones absent)
    and each row's key and cells in those columns (a selected row marked)."""
    titles = TAB_COLUMNS[tab]
    full = []
    for row in rows:
        key = row_key(tab, row)
        mark = Text("●", style="bold yellow") if key in selected else " "
        full.append((key, [mark, *item_cells(tab, row, now)]))
    natural = {t: max([len(t), *(cell_width(cells[i]) for _, cells in full)])
               for i, t in enumerate(titles)}
    widths = fit_columns(titles, natural, width, TAB_FITS[tab])
    return widths, [(key, [fitted(cell, widths[t])
                           for t, cell in zip(titles, cells, strict=True) if t in widths])
                    for key, cells in full]
