"""``rq-cli stats --watch``: a live dashboard of queues, or JSON lines when piped.

Every ``--interval`` seconds each queue's stats are read (one round trip per queue); rates
per second come from the counters' increase since the previous read of that queue. On a
terminal a rich ``Live`` table is redrawn in place (it fits 80 columns: the queue column
folds, the numeric headers never split); otherwise one JSON line per queue per interval.
A queue that cannot be read is an error row, and its rates start afresh once it is back.
Ctrl-C ends the watch with exit 0.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from ..metrics import RATE_COUNTERS, rates
from ..render import Column, Output, epoch, human, json_line
from .monitor import read_stats

if TYPE_CHECKING:
    from .common import State
    from .inspect import Target

#: the dashboard's columns: 80 terminal columns hold them with a 10-character queue column
DASHBOARD_COLUMNS = [
    Column("queue"),
    Column("pending", kind="number"),
    Column("leased", kind="number"),
    Column("abandoned", "aband.", kind="number"),
    Column("delayed", kind="number"),
    Column("dead", kind="number"),
    Column("oldest_pending_age_s", "oldest", kind="age"),
    *(Column(f"rate_{name}", f"{label}/s", kind="rate")
      for name, label in zip(RATE_COUNTERS, ("push", "done", "fail", "dead"), strict=True)),
]


class Poller:
    """Reads the targets' stats, and the rates since the previous read of each."""

    def __init__(self, st: State, targets: Sequence[Target]) -> None:
        self.st, self.targets = st, targets
        self.previous: dict[int, tuple[float, dict[str, int]]] = {}

    def poll(self) -> list[dict[str, Any]]:
        rows = []
        for i, target in enumerate(self.targets):
            got = read_stats(self.st, target)
            at = time.monotonic()
            row: dict[str, Any] = {"queue": target.name, "prefix": target.queue.prefix,
                                   "at": epoch(time.time())}
            if isinstance(got, str):
                self.previous.pop(i, None)  # rates start afresh once it is back
                row["error"] = got
                rows.append(row)
                continue
            row.update({k: v for k, v in asdict(got).items() if k != "queue"})  # (the prefix)
            before = self.previous.get(i)
            row["rates"] = (None if before is None else
                            {k: round(v, 3) for k, v in
                             rates(before[1], got.counters, at - before[0]).items()})
            self.previous[i] = (at, got.counters)
            rows.append(row)
        return rows


def watch(st: State, out: Output, targets: Sequence[Target], *, interval: float,
          iterations: int | None = None) -> None:
    """Refresh every ``interval`` seconds, ``iterations`` times or until Ctrl-C."""
    poller = Poller(st, targets)
    live = None if out.json else _Dashboard(out, interval)
    done = 0
    next_at = time.monotonic()
    try:
        while True:
            rows = poller.poll()
            if live is None:
                out.lines(json_line(row) for row in rows)
            else:
                live.show(rows)
            done += 1
            if iterations is not None and done >= iterations:
                break
            next_at += interval
            pause = next_at - time.monotonic()
            if pause < 0:  # a slow read: start the next interval from now
                next_at, pause = time.monotonic(), 0.0
            time.sleep(pause)
    except KeyboardInterrupt:
        pass  # Ctrl-C is how a watch ends: exit 0
    finally:
        if live is not None:
            live.close()


class _Dashboard:
    """The rich Live view; rich is imported only here."""

    def __init__(self, out: Output, interval: float) -> None:
        from rich.live import Live

        self.interval = interval
        self.console = out.console()
        self.live = Live(console=self.console, auto_refresh=False, transient=False,
                         redirect_stdout=False, redirect_stderr=False,
                         vertical_overflow="crop")
        # Keystrokes are not echoed meanwhile: the terminal's "^C" (or any key typed) would
        # move the cursor off the view, and the last redraw would land one line lower.
        self.echo = _EchoOff()
        self.live.start()

    def show(self, rows: list[dict[str, Any]]) -> None:
        self.live.update(dashboard(rows, self.interval), refresh=True)

    def close(self) -> None:
        try:
            self.live.stop()
        finally:
            self.echo.restore()


class _EchoOff:
    """Turn off the echo of the controlling terminal on stdin (if it is one) until restore."""

    def __init__(self) -> None:
        self.saved: list[Any] | None = None
        try:
            import termios

            self.fd = sys.stdin.fileno()
            self.saved = termios.tcgetattr(self.fd)
            quiet = termios.tcgetattr(self.fd)
            quiet[3] &= ~termios.ECHO
            termios.tcsetattr(self.fd, termios.TCSANOW, quiet)
        except (ImportError, OSError, ValueError, AttributeError):  # not a terminal
            self.saved = None

    def restore(self) -> None:
        if self.saved is not None:
            import termios

            termios.tcsetattr(self.fd, termios.TCSANOW, self.saved)
            self.saved = None


def cell(row: dict[str, Any], column: Column) -> str:
    if column.kind == "rate":
        value = (row.get("rates") or {}).get(column.key[len("rate_"):])
        if value is None:
            return "-"
        return f"{value:.1f}" if value < 1000 else f"{value:.0f}"
    return human(row.get(column.key), column.kind)


def dashboard(rows: list[dict[str, Any]], interval: float, now: float | None = None) -> Any:
    """The dashboard for ``rows`` (from :class:`Poller`): a rich Table that fits 80 columns."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    stamp = time.strftime("%H:%M:%S", time.localtime(time.time() if now is None else now))
    table = Table(title=f"rq-cli stats --watch · every {interval:g}s · {stamp} · Ctrl-C quits",
                  title_justify="left", title_style="bold", box=box.SIMPLE_HEAD,
                  padding=(0, 0), show_edge=False, pad_edge=False, header_style="bold",
                  caption_justify="left")
    for col in DASHBOARD_COLUMNS:
        first = col.key == "queue"
        table.add_column(col.title, justify="left" if first else "right", no_wrap=not first,
                         overflow="fold")
    notes = []
    for row in rows:
        if "error" in row:
            table.add_row(Text(human(row["queue"]), style="bold red"), Text("error", "red"),
                          *["-"] * (len(DASHBOARD_COLUMNS) - 2))
            notes.append(Text(f"{human(row['queue'])}: {human(row['error'])}", style="red"))
            continue
        name = Text(human(row["queue"]), style="yellow" if row.get("paused") else "")
        style = "red" if row.get("abandoned") else ""
        cells = [cell(row, col) for col in DASHBOARD_COLUMNS[1:]]
        table.add_row(name, *cells, style=style)
    paused = [human(row["queue"]) for row in rows if row.get("paused")]
    if paused:
        notes.append(Text(f"paused: {', '.join(paused)}", style="yellow"))
    if not rows:
        notes.append(Text("no queues: name some, configure some, or push to one"))
    if notes:
        table.caption = Text("\n").join(notes)
    return table
