"""A queue's history as a chart both consoles draw (the web as SVG, the terminal as text):
time on the x axis with labels in the local zone, counts per minute on the y axis with a
rounded top, one series per counter of the history (core/contract/keys.py's HISTORY_FIELDS, so a
counter the history adds is drawn without a change here)."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.contract.keys import HISTORY_FIELDS

if TYPE_CHECKING:
    from ..core.history import Bucket

#: Labels on the time axis (about; the first and last bucket always).
X_LABELS = 5
#: Labels on the count axis: 0, the middle, the top.
Y_LABELS = 3


@dataclass
class Chart:
    """The history's per-minute counts: ``times`` (each bucket's start, epoch s, oldest
    first), ``series`` (counter -> a count per minute per bucket), ``top`` (the y axis's
    end, rounded up), the axes' labels, and the zone the times are said in."""

    times: list[float]
    series: dict[str, list[float]]
    top: float
    zone: str

    @property
    def empty(self) -> bool:
        return not self.times

    def y_ticks(self) -> list[tuple[float, str]]:
        """(value, label) from 0 to the top."""
        return [(self.top * i / (Y_LABELS - 1), _count(self.top * i / (Y_LABELS - 1)))
                for i in range(Y_LABELS)]

    def x_ticks(self, n: int = X_LABELS) -> list[tuple[int, str]]:
        """(bucket index, ``HH:MM`` local time) for about ``n`` evenly spaced buckets, the
        first and the last included (a day's date where the span passes midnight)."""
        if not self.times:
            return []
        last = len(self.times) - 1
        step = max(1, math.ceil(last / max(1, n - 1)))
        picked = sorted({*range(0, last, step), last})
        if len(picked) > 1 and picked[-1] - picked[-2] < step / 2:
            del picked[-2]  # (a label squeezed next to the last one)
        days = len({time.strftime("%Y-%m-%d", time.localtime(t)) for t in self.times}) > 1
        fmt = "%m-%d %H:%M" if days else "%H:%M"
        return [(i, time.strftime(fmt, time.localtime(self.times[i]))) for i in picked]

    def last(self, field: str) -> float:
        values = self.series.get(field) or [0.0]
        return values[-1]


def chart(buckets: Sequence[Bucket]) -> Chart:
    """The chart of ``buckets`` (read_history's, oldest first): a bucket spanning several
    minutes (nobody snapshotted between) is its counts per minute."""
    series: dict[str, list[float]] = {f: [] for f in HISTORY_FIELDS}
    for bucket in buckets:
        per = max(bucket.seconds / 60, 1.0)
        for field in HISTORY_FIELDS:
            series[field].append(bucket.deltas.get(field, 0) / per)
    peak = max((v for values in series.values() for v in values), default=0.0)
    return Chart([b.at for b in buckets], series, nice_top(peak), zone())


def nice_top(peak: float) -> float:
    """The y axis's end: ``peak`` rounded up to 1, 2, 2.5 or 5 times a power of ten (at
    least 1)."""
    if peak <= 1:
        return 1.0
    power = 10.0 ** math.floor(math.log10(peak))
    return next(step * power for step in (1, 2, 2.5, 5, 10) if peak <= step * power)


def zone(at: float | None = None) -> str:
    """The local zone's name and offset (``UTC+00:00``, ``CET+01:00``)."""
    t = time.localtime(at)
    offset = time.strftime("%z", t)
    return f"{time.strftime('%Z', t)}{offset[:3]}:{offset[3:]}"


def _count(v: float) -> str:
    return f"{v:,.0f}" if v >= 10 or v == int(v) else f"{v:,.1f}"
