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

import base64
import json
import math
import re
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from json.encoder import encode_basestring, encode_basestring_ascii
from typing import Any, TextIO

from .core.util import TOO_DEEP, json_too_deep
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


# -- JSON --------------------------------------------------------------------------------------


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def _ignore_number(text: str) -> None:  # validation only: no int-size limit, no float cost
    return None


_VALIDATOR = json.JSONDecoder(parse_constant=_reject_constant, parse_int=_ignore_number,
                              parse_float=_ignore_number)
_scan: Any = _VALIDATOR.scan_once  # type: ignore[attr-defined]  # the C scanner


def check_json(text: str) -> None:
    """Raise ValueError unless ``text`` is one valid JSON text (surrounding whitespace allowed).

    A fast path for the common case (a value right at the start) avoids the decoder's
    whitespace regex; everything else goes through the full decoder.
    """
    if json_too_deep(text):
        raise ValueError(TOO_DEEP)
    try:
        try:
            end = _scan(text, 0)[1]
        except StopIteration:
            _VALIDATOR.decode(text)  # leading whitespace, or not JSON: the full path decides
            return
        if end != len(text) and text[end:].strip(" \t\n\r"):  # (JSON's whitespace only)
            _VALIDATOR.decode(text)  # raises "Extra data" with a position
    except RecursionError:
        raise ValueError(TOO_DEEP) from None  # (the decoder recurses per level)


def is_json(text: str) -> bool:
    try:
        check_json(text)
    except ValueError:
        return False
    return True


_JSON_SPACE = " \t\n\r"


def data_json(data: bytes) -> tuple[str, str, bool]:
    """(key suffix, JSON text, raw) for payload ``data``: ("", embedded, False), ("", a JSON
    string of the text, True) or ("_b64", a base64 string, False); see the module docstring.

    Lossless: a JSON text is embedded only where a reader gets its exact bytes back (the
    value's own text), so not with whitespace around it or a line break in it."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "_b64", '"' + base64.b64encode(data).decode("ascii") + '"', False
    if text and text[0] not in _JSON_SPACE and text[-1] not in _JSON_SPACE and \
            "\n" not in text and "\r" not in text and is_json(text):
        return "", text, False
    return "", encode_basestring(text), True


def _value(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return encode_basestring_ascii(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return json.dumps(round(value, 3))
    if isinstance(value, dict):
        return "{" + ",".join(encode_basestring_ascii(str(k)) + ":" + _value(v)
                              for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_value(v) for v in value) + "]"
    return json.dumps(value, separators=(",", ":"))


#: floats written by orjson as ``repr`` would write them (beyond, ``repr`` uses ``1e+16``)
_PLAIN_FLOAT = 1e16


def json_line(row: dict[str, Any]) -> str:
    """One compact JSON object. ``bytes`` values are payload data (see the module docstring).

    Encoded by orjson: for a ``peek`` row 2.5 us instead of 5.8 us in :func:`json_line_text`
    (most of the rest is validating the payload, which both do), and byte for byte the same
    output: a row orjson would write
    otherwise (text outside payload data that is not ASCII, which is written with ``\\u``
    escapes; a float that is huge or not finite; an integer beyond 64 bits) goes to
    :func:`json_line_text`. Nested values (``counters``) are written by it too."""
    import orjson

    fast: dict[str, Any] = {}
    for key, value in row.items():
        if value is None or value is True or value is False:
            fast[key] = value
        elif isinstance(value, str):
            if not value.isascii():
                return json_line_text(row)
            fast[key] = value
        elif isinstance(value, bytes):
            suffix, text, raw = data_json(value)
            if (raw and "raw" in row) or (suffix and key + suffix in row):  # (keys twice)
                return json_line_text(row)
            fast[key + suffix] = orjson.Fragment(text)
            if raw:
                fast["raw"] = True
        elif isinstance(value, int):
            fast[key] = value
        elif isinstance(value, float):
            if not abs(value) < _PLAIN_FLOAT:  # (NaN too)
                return json_line_text(row)
            fast[key] = round(value, 3)
        else:
            fast[key] = orjson.Fragment(_value(value))
        if not key.isascii():
            return json_line_text(row)
    try:
        return orjson.dumps(fast).decode()
    except orjson.JSONEncodeError:  # an integer beyond 64 bits
        return json_line_text(row)


def json_line_text(row: dict[str, Any]) -> str:
    """:func:`json_line`, in pure Python: every row, whatever its values."""
    parts = []
    for key, value in row.items():
        if isinstance(value, bytes):
            suffix, text, raw = data_json(value)
            parts.append(f'"{key}{suffix}":{text}' + (',"raw":true' if raw else ""))
        else:
            parts.append(encode_basestring_ascii(key) + ":" + _value(value))
    return "{" + ",".join(parts) + "}"


def epoch(seconds: float | None) -> float | None:
    """Epoch seconds with millisecond precision (docs/DESIGN.md section 4)."""
    return None if seconds is None else round(seconds, 3)


# -- human formats (tables) --------------------------------------------------------------------

_CONTROL = r"[\x00-\x1f\x7f-\x9f]"  # compiled (and cached) by re on first use
PREVIEW_CHARS = 200


def _escape_control(text: str) -> str:
    """Make control characters (ESC, CR, ...) visible, so a payload cannot drive the terminal."""
    return re.sub(_CONTROL, lambda m: repr(m.group())[1:-1], text)


def human_data(data: bytes | None) -> str:
    if data is None:
        return "(no data)"
    text = data[: PREVIEW_CHARS * 4].decode("utf-8", "backslashreplace")
    text = _escape_control(text)
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
        return ", ".join(_escape_control(str(v)) for v in value) or "-"
    return _escape_control(str(value))


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
            yield _NoProgress()
            return
        bar = progress_bar(self.console(stderr=True), total is not None)
        with bar:
            task = bar.add_task(label, total=total, count="")
            shown = _RichProgress(bar, task, label, total, unit)
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


class Progress:
    """What a command sees of a progress bar; a no-op when none is drawn."""

    done = 0  # units done so far (what :meth:`advance` added up)

    def advance(self, n: int) -> None:
        """``n`` more units done (the core's ``progress`` callback)."""
        self.done += n

    def set(self, completed: int | None, description: str | None = None) -> None:
        """Absolute position (for example bytes read of stdin), and a new label."""

    def wait(self, seconds: float, what: str) -> None:
        """Sleep ``seconds``, saying meanwhile ``what`` it waits for and how long is left."""
        time.sleep(seconds)


class _NoProgress(Progress):
    pass


def progress_bar(console: Any, bounded: bool) -> Any:
    """The rich Progress of :meth:`Output.progress`: spinner, label, bar, counts, times."""
    from rich.progress import (
        BarColumn,
        SpinnerColumn,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.progress import Progress as RichProgress

    columns: list[Any] = [SpinnerColumn(), TextColumn("{task.description}")]
    if bounded:
        columns += [BarColumn(), TaskProgressColumn()]
    columns += [TextColumn("{task.fields[count]}"), TimeElapsedColumn()]
    if bounded:
        columns += [TextColumn("left"), TimeRemainingColumn()]
    return RichProgress(*columns, console=console, transient=True)


class _RichProgress(Progress):
    def __init__(self, bar: Any, task: Any, label: str, total: int | None,
                 unit: str) -> None:
        self.bar, self.task, self.label, self.total, self.unit = bar, task, label, total, unit

    def _count(self, done: int) -> str:
        if not self.unit:
            return ""
        if self.total is None:
            return f"{done:,} {self.unit}"
        return f"{done:,}/{self.total:,} {self.unit}"

    def advance(self, n: int) -> None:
        self.done += n
        self.bar.update(self.task, advance=n, count=self._count(self.done))

    def set(self, completed: int | None, description: str | None = None) -> None:
        changes: dict[str, Any] = {}
        if completed is not None:
            changes["completed"] = completed
            changes["count"] = self._count(completed)
        if description is not None:
            changes["description"] = self.label = description
        self.bar.update(self.task, **changes)

    def wait(self, seconds: float, what: str) -> None:
        label = self.label
        end = time.monotonic() + seconds
        try:
            while (left := end - time.monotonic()) > 0:
                self.bar.update(self.task,
                                description=f"{label}: {what}: {math.ceil(left)}s left")
                time.sleep(min(left, 0.2))
        finally:
            self.bar.update(self.task, description=label)


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
    from .core.env import ENV_DEBUG, env_bool

    return env_bool(ENV_DEBUG)
