"""Output: the one place that decides between a table for people and JSON lines for programs.

- stdout is a terminal (and no ``--json``): a rich table. rich is imported here, lazily, only
  when a table or progress bar is actually drawn (it costs ~70 ms of start-up).
- otherwise: compact JSON, one object per line, written to stdout and flushed after every
  batch of lines (a batch is what one core call returned: one write per batch, not per line).
- messages, warnings and progress go to stderr; progress bars only when stderr is a terminal.

Payload data (``bytes``) is written as follows, everywhere:

- valid UTF-8 holding a valid JSON text (RFC 8259: no NaN/Infinity) with no whitespace
  around it and no line break in it: embedded verbatim as JSON under ``"data"``;
- other valid UTF-8 (plain text, or JSON a reader would not get back byte for byte): a JSON
  string of the text under ``"data"``, followed by ``"raw": true``, so that the plain text
  ``hi`` (``"data":"hi","raw":true``) and the JSON string ``"hi"`` (``"data":"hi"``) differ;
- not UTF-8: base64 under ``"data_b64"`` instead of ``"data"``, so nothing is lost
  (``push --with-ids`` reads ``data_b64`` back);
- no data at all (``peek`` of a ghost: an id whose data key is gone): ``"data": null``;
- ``--raw``: the bare bytes, one item per line.

Whether stdout/stderr/stdin are terminals is decided by a :class:`Terminal`, which tests
replace to force table mode or an interactive stdin.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TextIO

from .jsonlines import json_line
from .progress import BarProgress, NoProgress, Progress, progress_bar
from .tables import Column as Column  # (the commands name their columns from here)
from .tables import Layout, draw_table, dropped_note, fit_table, plain_rows, refit_table

# -- terminals ---------------------------------------------------------------------------------


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed or replaced stream
        return False


@dataclass
class Terminal:
    """Which standard streams are terminals. ``None`` = ask the stream (the default)."""

    stdout: bool | None = None
    stderr: bool | None = None
    stdin: bool | None = None
    width: int | None = None  # table width; None = the terminal's

    def stdout_isatty(self) -> bool:
        return _isatty(sys.stdout) if self.stdout is None else self.stdout

    def stderr_isatty(self) -> bool:
        return _isatty(sys.stderr) if self.stderr is None else self.stderr

    def stdin_isatty(self) -> bool:
        return _isatty(sys.stdin) if self.stdin is None else self.stdin




# -- human formats (tables) --------------------------------------------------------------------

#: The bidirectional controls (embeddings, overrides, isolates, marks): shown as escapes too,
#: or a payload could reorder the text around it.
BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_CONTROL = f"[\x00-\x1f\x7f-\x9f{BIDI}]"  # compiled (and cached) by re on first use
PREVIEW_CHARS = 200


def escape_control(text: str) -> str:
    """Make control characters (ESC, CR, ...) visible, so a payload cannot drive the terminal."""
    return re.sub(_CONTROL, lambda m: repr(m.group())[1:-1], text)


def human_data(data: bytes | None) -> str:
    if data is None:
        return "(no data)"
    text = data[: PREVIEW_CHARS * 4].decode("utf-8", "backslashreplace")
    text = escape_control(text)
    if len(text) > PREVIEW_CHARS or len(data) > PREVIEW_CHARS * 4:
        text = text[:PREVIEW_CHARS] + "…"
    return text


def human_duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    sign, seconds = ("-" if seconds < 0 else ""), abs(seconds)
    if seconds < 60:
        return f"{sign}{seconds:.1f}s" if seconds < 10 else f"{sign}{seconds:.0f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{sign}{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{sign}{hours}h{minutes:02d}m"
    return f"{sign}{hours // 24}d{hours % 24:02d}h"


def human_time(at: float | None, now: float | None = None) -> str:
    if at is None:
        return "-"
    now = time.time() if now is None else now
    same_day = time.localtime(at)[:3] == time.localtime(now)[:3]
    stamp = time.strftime("%H:%M:%S" if same_day else "%Y-%m-%d %H:%M:%S", time.localtime(at))
    delta = at - now
    relative = f"in {human_duration(delta)}" if delta >= 0 else f"{human_duration(-delta)} ago"
    return f"{stamp} ({relative})"


def human(value: Any, kind: str = "text") -> str:
    if kind == "data":
        return human_data(value)
    if kind == "time":
        return human_time(value)
    if kind == "age":
        return human_duration(value)
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return " ".join(f"{k}={v}" for k, v in value.items()) or "-"
    if isinstance(value, (list, tuple)):
        return ", ".join(escape_control(str(v)) for v in value) or "-"
    return escape_control(str(value))


# -- output ------------------------------------------------------------------------------------


def table_cells(rows: Sequence[dict[str, Any]], columns: Sequence[Column]) -> list[list[str]]:
    return [[human(row.get(col.key), col.kind) for col in columns] for row in rows]


class Output:
    """Where a command's results go. ``json`` is decided once, here."""

    def __init__(self, terminal: Terminal | None = None, *, as_json: bool = False) -> None:
        self.terminal = terminal or Terminal()
        self.forced_json = as_json  # --json given: JSON even where plain text would do
        self.json = as_json or not self.terminal.stdout_isatty()

    # bytes straight to stdout, flushed: the data channel
    def write(self, chunk: bytes | str) -> None:
        """Write all of ``chunk`` to stdout and flush it.

        A reader that has gone away (``| head``) raises BrokenPipeError, here or on the
        next write, whatever the buffering; the command ends with exit 141 (cli/root.py).
        """
        if not chunk:
            return
        if isinstance(chunk, str):
            chunk = chunk.encode("utf-8", "surrogateescape")
        stream = sys.stdout
        stream.flush()
        buffer = getattr(stream, "buffer", None)
        if buffer is None:  # a text-only stream (some test harnesses)
            stream.write(chunk.decode("utf-8", "replace"))
            stream.flush()
            return
        write_all(buffer, chunk)
        buffer.flush()

    def lines(self, lines: Iterable[str]) -> None:
        """Pre-encoded JSON lines, written in one go."""
        text = "\n".join(lines)
        if text:
            self.write(text + "\n")

    def rows(self, rows: Sequence[dict[str, Any]], columns: Sequence[Column],
             title: str | None = None) -> None:
        """JSON lines, or one table on a terminal."""
        if self.json:
            self.lines(json_line(row) for row in rows)
        else:
            self.table(rows, columns, title=title)

    def record(self, row: dict[str, Any], title: str | None = None) -> None:
        """One object: a JSON line, or a two-column table on a terminal."""
        if self.json:
            self.lines([json_line(row)])
            return
        kv = [{"field": k.replace("_", " "), "value": human(v)} for k, v in row.items()]
        self.table(kv, [Column("field"), Column("value", kind="words", drop=0)], title=title,
                   show_header=False)

    def stream(self, columns: Sequence[Column], title: str | None = None) -> RowStream:
        """Rows arriving in batches: JSON lines written as they come, or on a terminal a
        table drawn page by page (:class:`RowStream`)."""
        return RowStream(self, columns, title)

    def raw(self, items: Iterable[bytes]) -> None:
        """Bare payloads, one per line (``--raw``)."""
        self.write(b"".join(item + b"\n" for item in items))

    def table(self, rows: Sequence[dict[str, Any]], columns: Sequence[Column],
              title: str | None = None, show_header: bool = True) -> None:
        """One table fitted to the terminal (see :meth:`table_page`)."""
        self.table_page(rows, columns, title=title, show_header=show_header)

    def table_page(self, rows: Sequence[dict[str, Any]], columns: Sequence[Column],
                   title: str | None = None, show_header: bool = True,
                   layout: Layout | None = None) -> Layout:
        """Draw ``rows`` as a table fitted to the terminal, and return its layout.

        Ids, names, sessions, times and numbers never wrap; data wraps anywhere, words
        columns (errors, lists) between words; headers never split. Columns that do not fit
        even so are dropped, least important first (:attr:`Column.drop`), with one note on
        stderr saying which and how to see them. Given the ``layout`` of the previous page
        of a stream, the same columns are drawn at the same widths, with no header: the
        pages read as one table."""
        console = self.console()
        if layout is None:
            columns = [col for col in columns if not col.optional
                       or any(row.get(col.key) is not None for row in rows)]
            cells = table_cells(rows, columns)
            layout = fit_table(cells, columns, console.width, show_header)
            if layout.dropped:
                self.message(dropped_note(layout.dropped, console.width))
                kept = [columns.index(col) for col in layout.columns]
                cells = [[line[n] for n in kept] for line in cells]
        else:
            cells = table_cells(rows, layout.columns)
            layout = refit_table(layout, cells, console.width)
            title, show_header = None, False
        body = plain_rows(cells, layout)
        if body is None:  # (wide characters, or a column that cannot fit: rich decides)
            console.print(draw_table(cells, layout, title, show_header))
            return layout
        if title or show_header:
            console.print(draw_table([], layout, title, show_header))
        self.write(body)
        return layout

    def text(self, text: str) -> None:
        """Plain human text on stdout (terminal mode only)."""
        self.write(text + "\n")

    def console(self, stderr: bool = False) -> Any:
        from rich.console import Console

        return Console(file=sys.stderr if stderr else sys.stdout, markup=False, emoji=False,
                       highlight=False, width=self.terminal.width)

    # messages: stderr, never data
    def message(self, text: str) -> None:
        message(text)

    @contextmanager
    def progress(self, label: str, total: int | None = None,
                 unit: str = "items") -> Iterator[Progress]:
        """A progress bar on stderr when it is a terminal; otherwise a no-op.

        It shows its numbers: ``1,200/5,000 items`` (or ``1,200 items`` with no total), the
        percentage, the time spent and, with a total, the time left."""
        if not self.terminal.stderr_isatty():
            yield NoProgress()
            return
        bar = progress_bar(self.console(stderr=True), total is not None)
        with bar:
            task = bar.add_task(label, total=total, count="")
            shown = BarProgress(bar, task, label, total, unit)
            shown.advance(0)
            yield shown


class RowStream:
    """See :meth:`Output.stream`. Use as a context manager, or call :meth:`close`.

    On a terminal, rows are drawn in pages as they come (a page once ``PAGE_ROWS`` rows
    wait, or the first of them has waited ``PAGE_SECONDS``), so the first rows show at
    once and memory stays flat whatever the number of rows; the pages share one layout.
    ``count`` is the rows added, ``shown`` those written or drawn so far."""

    def __init__(self, out: Output, columns: Sequence[Column], title: str | None) -> None:
        self.out, self.columns, self.title = out, columns, title
        self.rows: list[dict[str, Any]] = []
        self.count = self.shown = 0
        self.layout: Layout | None = None
        self.since: float | None = None  # when the first waiting row came

    def add(self, rows: Sequence[dict[str, Any]]) -> None:
        self.count += len(rows)
        if self.out.json:  # in slices, so that ``shown`` is what a reader got, or nearly
            for at in range(0, len(rows), JSON_SLICE):
                part = rows[at:at + JSON_SLICE]
                self.out.lines(json_line(row) for row in part)
                self.shown += len(part)
            return
        if not rows:
            return
        self.rows.extend(rows)
        now = time.monotonic()
        if self.since is None:
            self.since = now
        if len(self.rows) >= PAGE_ROWS or now - self.since >= PAGE_SECONDS:
            self.flush()

    def flush(self) -> None:
        """Draw the rows waiting (terminal mode)."""
        if self.rows:
            rows, self.rows, self.since = self.rows, [], None
            self.layout = self.out.table_page(rows, self.columns, title=self.title,
                                              layout=self.layout)
            self.shown += len(rows)

    def close(self) -> None:
        self.flush()

    def __enter__(self) -> RowStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()  # also on errors and Ctrl-C: what was done is shown (a page at most)


#: Rows a terminal stream gathers before it draws them, and the longest the first waits.
PAGE_ROWS = 200
PAGE_SECONDS = 0.25
#: JSON lines a stream writes at a time (a Ctrl-C's count is exact to a slice).
JSON_SLICE = 100




def write_all(buffer: Any, chunk: bytes) -> None:
    """``buffer.write(chunk)`` until every byte is written.

    Unbuffered (``python -u``, ``PYTHONUNBUFFERED=1``), ``sys.stdout.buffer`` is a raw
    ``FileIO``, whose ``write`` is one system call and may write only part of the chunk --
    for example when the reader closes the pipe part-way through; the next call then
    raises BrokenPipeError. A non-blocking stdout may write nothing (None, or
    BlockingIOError): wait until it can take more.
    """
    view = memoryview(chunk)
    while view:
        try:
            written = buffer.write(view)
        except BlockingIOError as exc:
            written = exc.characters_written
        if not written:
            _wait_writable(buffer)
            continue
        view = view[written:]


def _wait_writable(buffer: Any) -> None:
    import select

    try:
        select.select([], [buffer.fileno()], [], 1.0)
    except (AttributeError, OSError, ValueError):  # no file descriptor: just retry
        time.sleep(0.01)


def message(text: str, stream: TextIO | None = None) -> None:
    """One line on stderr."""
    stream = stream or sys.stderr
    stream.write(text.rstrip("\n") + "\n")
    stream.flush()


def debug_enabled() -> bool:
    from ..core.contract.env import ENV_DEBUG, env_bool

    return env_bool(ENV_DEBUG)
