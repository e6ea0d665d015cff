"""Fitting a table's columns to the terminal, without Textual: the columns worth reading
(an error, a payload) get the room, and the less useful ones are dropped first when the
terminal is narrow, so nothing useful is cut to a stub ("connection ref", ``{"``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: Columns a cell of the table pads on each side (Textual's DataTable: one).
PADDING = 1


@dataclass(frozen=True)
class Fit:
    """How one tab's columns are fitted: ``flexible`` share what is left, each at least its
    minimum and in proportion to its weight; ``drop``, in this order while the flexible
    columns would get less than their minimums: a title (the column is given up) or
    (title, width) (the column is narrowed to that width, its cells cut)."""

    flexible: Mapping[str, tuple[int, int]]  # title -> (minimum, weight)
    drop: Sequence[str | tuple[str, int]] = ()


def fit_columns(titles: Sequence[str], natural: Mapping[str, int], width: int,
                fit: Fit) -> dict[str, int]:
    """The width of each column kept (in ``titles`` order; a dropped one is absent) for a
    table ``width`` columns wide; ``natural``: each column's widest cell or title. A
    flexible column never gets more than its natural width unless room is left over."""
    kept = list(titles)
    natural = dict(natural)

    def left_for_flexible(columns: Sequence[str]) -> int:
        fixed = sum(natural.get(t, len(t)) + 2 * PADDING for t in columns
                    if t not in fit.flexible)
        flexible = sum(2 * PADDING for t in columns if t in fit.flexible)
        return width - fixed - flexible

    need = sum(min(fit.flexible[t][0], natural.get(t, len(t))) for t in kept
               if t in fit.flexible)
    for step in fit.drop:
        if left_for_flexible(kept) >= need:
            break
        if isinstance(step, tuple):
            title, narrow = step
            natural[title] = min(natural.get(title, len(title)), narrow)
        elif step in kept:
            kept.remove(step)
    room = max(0, left_for_flexible(kept))
    widths = {t: natural.get(t, len(t)) for t in kept if t not in fit.flexible}
    flex = [t for t in kept if t in fit.flexible]
    # first the minimums (or less, where the content is narrower), then by weight up to
    # each column's natural width; room still left stays blank
    got = {t: min(fit.flexible[t][0], natural.get(t, len(t))) for t in flex}
    spare = room - sum(got.values())
    wanting = [t for t in flex if got[t] < natural.get(t, len(t))]
    while spare > 0 and wanting:
        total = sum(fit.flexible[t][1] for t in wanting)
        given = 0
        for t in wanting:
            share = max(1, spare * fit.flexible[t][1] // total)
            share = min(share, natural.get(t, len(t)) - got[t], spare - given)
            got[t] += share
            given += share
        spare -= given
        wanting = [t for t in wanting if got[t] < natural.get(t, len(t))]
        if given == 0:
            break
    widths.update(got)
    return {t: widths[t] for t in kept}


def cut(text: str, width: int) -> str:
    """``text`` in ``width`` columns: whole, or its start and an ellipsis."""
    if width <= 0:
        return ""
    return text if len(text) <= width else text[: width - 1] + "…"
