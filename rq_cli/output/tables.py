"""Tables for a terminal: which columns fit, how wide each is, and drawing them.

One rule for every table: ids, queue names, sessions, times and numbers never
wrap and are never shortened; headers never split; data wraps anywhere, ``words`` columns
(errors, lists of ids) between words. What still does not fit is dropped, least important
first (:attr:`Column.drop`), and named (:func:`dropped_note`). :func:`fit_table` decides a
:class:`Layout` from the cells (strings, as :func:`rq_cli.output.render.human` makes them);
:func:`draw_table` makes the rich Table of it (headers, live views) and :func:`plain_rows`
draws rows without rich, fast, where they are plain ASCII. rich is imported only when a
table is measured or drawn. :mod:`rq_cli.output.render` uses it; commands name columns with
:class:`Column` (also importable from there).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple


class Column(NamedTuple):  # (NamedTuple: cheaper to create than a dataclass at start-up)
    key: str
    header: str = ""
    #: text (never wraps: names, ids, sessions) | words (wraps between words: errors, lists)
    #: | data (wraps anywhere) | time | age | number | rate (never wrap; the last three
    #: right-aligned)
    kind: str = "text"
    optional: bool = False  # left out of a table when no row has a value for it
    #: On a terminal too narrow for every column, higher ``drop`` goes first (ties: the
    #: rightmost first); 0 = never dropped. The first column and ``id`` are never dropped.
    drop: int = 1

    @property
    def title(self) -> str:
        return self.header or self.key.replace("_", " ")


#: Narrowest a data column is squeezed to while other columns can be dropped instead, and
#: the narrowest when they cannot.
DATA_COMFORT = 32
DATA_MIN = 16
#: Longest word a words column keeps whole (a longer one folds).
WORD_MAX = 40


class Layout(NamedTuple):
    """How a table is drawn: the columns kept, their widths, the padding; ``fits`` False
    when even the columns never dropped are too wide (then rich folds what it must)."""

    columns: list[Column]
    widths: list[int]
    least: list[int]  # the narrowest each column may be (wrapping ones less than wide)
    compact: bool
    dropped: list[Column]
    fits: bool


def wraps(col: Column) -> bool:
    """Whether a column's cells may wrap: data anywhere, words between words."""
    return col.kind in ("data", "words")


def _widths(cells: list[list[str]], columns: Sequence[Column], show_header: bool,
            data_min: int = 0) -> tuple[list[int], list[int]]:
    """(natural, least) width of each column: headers never split; ids, names, times and
    numbers never wrap; data may be squeezed to ``data_min``; words to the longest word."""
    from rich.cells import cell_len

    natural, least = [], []
    for n, col in enumerate(columns):
        head = cell_len(col.title) if show_header else 1
        texts = [line[n] for line in cells]
        wide = max([cell_len(t) for t in texts] + [head, 1])
        if col.kind == "data":
            low = min(wide, max(data_min, head))
        elif col.kind == "words":
            word = max([cell_len(w) for t in texts for w in t.split()] + [1])
            low = min(wide, max(head, min(word, WORD_MAX)))
        else:
            low = wide
        natural.append(wide)
        least.append(low)
    return natural, least


def fit_table(cells: list[list[str]], columns: Sequence[Column], width: int,
              show_header: bool = True) -> Layout:
    """The layout of a table ``width`` characters wide: every column at its natural width
    if it fits; else the wrapping columns narrower; else one space between columns; else
    columns dropped, least important first, until the rest fits. Data is kept at least
    ``DATA_COMFORT`` wide while other columns can give way, and squeezed down to
    ``DATA_MIN`` only when they cannot."""
    for data_min in (DATA_COMFORT, DATA_MIN):
        layout = _fit(cells, columns, width, show_header, data_min)
        if layout.fits and not any(col.kind == "data" for col in layout.dropped):
            break
    return layout


def _fit(cells: list[list[str]], columns: Sequence[Column], width: int, show_header: bool,
         data_min: int) -> Layout:
    natural, least = _widths(cells, columns, show_header, data_min)
    kept = list(range(len(columns)))
    order = sorted((n for n, col in enumerate(columns)
                    if n > 0 and col.key != "id" and col.drop > 0),
                   key=lambda n: (columns[n].drop, n), reverse=True)
    dropped: list[Column] = []
    while True:
        for compact in (False, True):
            spare = width - sum(least[n] for n in kept) - _overhead(len(kept), compact)
            if spare >= 0:
                grown = _share(spare, {n: natural[n] for n in kept}, {n: least[n] for n in kept})
                return Layout([columns[n] for n in kept], [grown[n] for n in kept],
                              [least[n] for n in kept], compact, dropped, True)
        if not order:
            return Layout([columns[n] for n in kept], [least[n] for n in kept],
                          [least[n] for n in kept], True, dropped, False)
        n = order.pop(0)
        kept.remove(n)
        dropped.append(columns[n])


def refit_table(layout: Layout, cells: list[list[str]], width: int) -> Layout:
    """The layout of the next page of a stream: the same columns; a column that never
    wraps grows to its widest cell, taking the room from the wrapping columns."""
    natural, _ = _widths(cells, layout.columns, False)
    widths = list(layout.widths)
    for n, col in enumerate(layout.columns):
        if not wraps(col):
            widths[n] = max(widths[n], natural[n])
    over = sum(widths) + _overhead(len(widths), layout.compact) - width
    for n in reversed(range(len(widths))):
        if over <= 0:
            break
        if wraps(layout.columns[n]):
            take = min(over, widths[n] - max(layout.least[n], 1))
            if take > 0:
                widths[n] -= take
                over -= take
    return layout._replace(widths=widths, fits=layout.fits and over <= 0, dropped=[])


def dropped_note(dropped: Sequence[Column], width: int) -> str:
    names = ", ".join(col.title for col in dropped)
    return (f"rq-cli: not shown at {width} columns: {names} (--json prints every field; "
            f"a wider terminal shows them)")


_OVERHEAD: dict[tuple[int, bool], int] = {}


def _overhead(count: int, compact: bool) -> int:
    """Characters a table of ``count`` columns spends on padding and rules, as rich
    measures it."""
    if (count, compact) not in _OVERHEAD:
        from rich.console import Console

        layout = Layout([Column(str(n)) for n in range(count)], [1] * count, [1] * count,
                        compact, [], True)
        table = draw_table([["x"] * count], layout, None, False)
        console = Console(width=1_000_000)
        size = console.measure(table).maximum
        _OVERHEAD[(count, compact)] = int(size) - count
    return _OVERHEAD[(count, compact)]


def _share(spare: int, natural: dict[int, int], floor: dict[int, int]) -> dict[int, int]:
    """Widths of the columns: each its floor, plus its natural width where ``spare`` (what
    the table can grow by beyond every floor) allows, else an even share of it."""
    widths = dict(floor)
    wanted = sorted(natural, key=lambda n: natural[n] - floor[n])
    for left, n in enumerate(wanted):
        extra = min(max(0, natural[n] - floor[n]), spare // (len(wanted) - left))
        widths[n] += extra
        spare -= extra
    return widths


def plain_rows(cells: list[list[str]], layout: Layout) -> str | None:
    """The rows of a table as :func:`draw_table` lays them out, drawn without rich (which
    takes most of a millisecond a row: a million-row ``peek`` would crawl), or None where
    only rich gets it right (wide or zero-width characters; a layout that does not fit)."""
    if not layout.fits or not _plain_like_rich(layout):
        return None
    import textwrap

    from rich.cells import cell_len

    gap = " " if layout.compact else "   "
    right = [col.kind in ("number", "rate", "age") for col in layout.columns]
    wrap = [wraps(col) for col in layout.columns]
    widths = layout.widths
    out: list[str] = []
    for line in cells:
        parts: list[list[str]] = []
        for n, text in enumerate(line):
            if not text.isascii() and cell_len(text) != len(text):
                return None
            if len(text) <= widths[n]:
                parts.append([text])
            elif wrap[n]:
                parts.append(textwrap.wrap(text, widths[n], break_on_hyphens=False) or [""])
            else:
                return None
        for k in range(max(len(p) for p in parts) if parts else 0):
            out.append(gap.join(
                (p[k] if k < len(p) else "").rjust(w) if r else
                (p[k] if k < len(p) else "").ljust(w)
                for p, w, r in zip(parts, widths, right, strict=True)).rstrip())
    return "".join(text + "\n" for text in out)


_PLAIN_OK: dict[tuple[Any, ...], bool] = {}


def _plain_like_rich(layout: Layout) -> bool:
    """Whether :func:`plain_rows` draws ``layout`` as rich does (once per layout: one row
    drawn both ways). rich's spacing of columns differs between its versions; where it differs
    from plain rows', rich draws every row."""
    key = (tuple(layout.widths), layout.compact, tuple(col.kind for col in layout.columns))
    if key not in _PLAIN_OK:
        from rich.console import Console

        sample = [["x" * w for w in layout.widths]]
        console = Console(width=sum(layout.widths) + _overhead(len(layout.widths),
                                                               layout.compact) + 8,
                          color_system=None, force_terminal=False, legacy_windows=False)
        with console.capture() as captured:
            console.print(draw_table(sample, layout, None, False))
        drawn = [line.rstrip() for line in captured.get().splitlines() if line.strip()]
        _PLAIN_OK[key] = drawn == [_plain_line(sample[0], layout)]
    return _PLAIN_OK[key]


def _plain_line(line: list[str], layout: Layout) -> str:
    gap = " " if layout.compact else "   "
    return gap.join(text.rjust(w) if col.kind in ("number", "rate", "age") else text.ljust(w)
                    for text, w, col in zip(line, layout.widths, layout.columns,
                                            strict=True)).rstrip()


def draw_table(cells: list[list[str]], layout: Layout, title: str | None,
               show_header: bool, styles: Sequence[str] | None = None) -> Any:
    """The rich Table of ``layout``: fixed widths, so rich never squeezes a column."""
    from rich.table import Table

    table = Table(title=title, show_header=show_header, header_style="bold",
                  title_justify="left", box=_box(), pad_edge=False, show_edge=False,
                  padding=(0, 0) if layout.compact else (0, 1))
    for n, col in enumerate(layout.columns):
        table.add_column(col.title, justify="right" if col.kind in ("number", "rate", "age")
                         else "left", overflow="fold",
                         no_wrap=layout.fits and not wraps(col),
                         width=layout.widths[n] if layout.fits else None,
                         min_width=None if layout.fits else layout.least[n])
    for n, line in enumerate(cells):
        table.add_row(*line, style=styles[n] if styles else None)
    return table


def _box() -> Any:
    from rich import box

    return box.SIMPLE_HEAD
