"""A queue's history graph in the terminal (under a queue's tabs): the console model's chart
(:mod:`rq_cli.console.chart`) drawn as text: counts per minute on the y axis (labelled),
time on the x axis (labelled in the local zone), one coloured series per counter, its
last minute's count in the legend."""

from __future__ import annotations

from rich.text import Text

from ..console.chart import Chart
from ..core.codes import Counter

#: Rows of the plot (the graph is these, a legend line above and the time axis below).
ROWS = 3
#: Lines the graph takes on screen.
LINES = ROWS + 2
#: Each counter's colour: trouble in red and magenta, the flow in green and blue.
COLOURS = {Counter.PUSHED.value: "blue", Counter.COMPLETED.value: "green",
           Counter.FAILED.value: "yellow", Counter.DEAD.value: "red",
           Counter.REQUEUED.value: "magenta"}
#: Drawn last (on top where two series share a cell): trouble shows.
_ON_TOP = (Counter.FAILED.value, Counter.DEAD.value)
_MARK = "•"


def graph_text(chart: Chart | None, width: int) -> Text:
    """The graph of ``chart`` in ``width`` columns; a line saying why there is none (None:
    the history cannot be read)."""
    if chart is None:
        return Text("history: not readable for this queue", style="dim")
    if chart.empty:
        return Text("history: none yet (it starts with the first snapshot: this console, "
                    "clean or a worker takes one a minute)", style="dim")
    ticks = chart.y_ticks()
    gutter = max(len(label) for _, label in ticks) + 2
    plot = max(10, width - gutter - 4)  # (the widget's padding: 1 a side)
    n = len(chart.times)
    column = [round(i * (plot - 1) / max(n - 1, 1)) for i in range(n)]
    cells: list[list[tuple[str, str]]] = [[(" ", "")] * plot for _ in range(ROWS)]
    order = sorted(chart.series, key=lambda f: f in _ON_TOP)
    for field in order:
        style = COLOURS.get(field, "white")
        for i, value in enumerate(chart.series[field]):
            if value <= 0:
                continue  # (0 is the axis)
            row = ROWS - 1 - min(ROWS - 1, int(value / chart.top * ROWS))
            cells[row][column[i]] = (_MARK, style)
    legend = Text(f"history, a minute ({chart.zone}): ", style="bold")
    for field in chart.series:
        legend.append("● ", style=COLOURS.get(field, "white"))
        legend.append(f"{field} {chart.last(field):,.0f} ")
    lines = [legend]
    for r in range(ROWS):
        # the top's label on the first row, the middle's on the middle row
        label = (ticks[-1][1] if r == 0 else ticks[1][1] if r == ROWS // 2 else "")
        line = Text(f"{label:>{gutter - 1}} ┤" if label else " " * (gutter - 1) + " │",
                    style="dim")
        for mark, style in cells[r]:
            line.append(mark, style=style)
        lines.append(line)
    lines.append(Text(f"{ticks[0][1]:>{gutter - 1}} └" + _time_axis(chart, column, plot),
                      style="dim"))
    graph = Text("\n").join(lines)
    graph.no_wrap, graph.overflow = True, "ellipsis"  # (a narrow terminal: each line cut)
    return graph


def _time_axis(chart: Chart, column: list[int], plot: int) -> str:
    """The x axis: a rule with the time labels written into it at their buckets' columns
    (a label that would overlap the one before is left out)."""
    axis = ["─"] * plot
    free = 0
    for index, label in chart.x_ticks():
        start = min(column[index], plot - len(label))
        if start < free:
            continue
        axis[start:start + len(label)] = label
        free = start + len(label) + 1
    return "".join(axis)
