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
import os
import re
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from json.encoder import encode_basestring, encode_basestring_ascii
from typing import Any, NamedTuple, TextIO

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
    try:
        end = _scan(text, 0)[1]
    except StopIteration:
        _VALIDATOR.decode(text)  # leading whitespace, or not JSON: the full path decides
        return
    if end != len(text) and not text[end:].isspace():
        _VALIDATOR.decode(text)  # raises "Extra data" with a position


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


def json_line(row: dict[str, Any]) -> str:
    """One compact JSON object. ``bytes`` values are payload data (see the module docstring)."""
    parts = []
    for key, value in row.items():
        if isinstance(value, bytes):
            suffix, text, raw = data_json(value)
            parts.append(f'"{key}{suffix}":{text}' + (',"raw":true' if raw else ""))
        else:
            parts.append(encode_basestring_ascii(key) + ":" + _value(value))
    return "{" + ",".join(parts) + "}"


def epoch(seconds: float | None) -> float | None:
    """Epoch seconds with millisecond precision (DESIGN.md section 4)."""
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


class Column(NamedTuple):  # (NamedTuple: cheaper to create than a dataclass at start-up)
    key: str
    header: str = ""
    kind: str = "text"  # text | data | time | age | number
    optional: bool = False  # left out of a table when no row has a value for it

    @property
    def title(self) -> str:
        return self.header or self.key.replace("_", " ")


# -- output ------------------------------------------------------------------------------------


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
        self.table(kv, [Column("field"), Column("value")], title=title, show_header=False)

    def stream(self, columns: Sequence[Column], title: str | None = None) -> RowStream:
        """Rows arriving in batches: JSON lines written per batch, or one table at the end."""
        return RowStream(self, columns, title)

    def raw(self, items: Iterable[bytes]) -> None:
        """Bare payloads, one per line (``--raw``)."""
        self.write(b"".join(item + b"\n" for item in items))

    def table(self, rows: Sequence[dict[str, Any]], columns: Sequence[Column],
              title: str | None = None, show_header: bool = True) -> None:
        """A table fitted to the terminal: headers never split inside a word, numbers and
        ids never wrap (on a narrow terminal an id is shortened in the middle, ``f1213…2899``),
        other text (data above all) wraps; optional columns no row fills are left out."""
        columns = [col for col in columns if not col.optional
                   or any(row.get(col.key) is not None for row in rows)]
        cells = [[human(row.get(col.key), col.kind) for col in columns] for row in rows]
        console = self.console()
        natural = {n: max([len(line[n]) for line in cells] + [0]) for n, col in
                   enumerate(columns) if not _fixed(col)}
        floor = {n: _min_width(columns[n], show_header) for n in natural}
        # room kept for the wrapping columns (data above all) before ids are shortened
        reserve = sum(max(0, min(natural[n], WRAP_RESERVE) - floor[n]) for n in natural)
        overflow = self.overflow(cells, columns, show_header, compact=False) + reserve
        compact = overflow > 0  # too wide: one space between columns instead of three
        if compact:
            overflow = self.overflow(cells, columns, show_header, compact=True) + reserve
        ids = [n for n, col in enumerate(columns) if col.key == "id"]
        if ids and overflow > 0:  # still too wide: shorten the ids in the middle
            longest = max((len(line[n]) for line in cells for n in ids), default=0)
            fit = max(MIN_ID_CHARS, longest - overflow)
            cells = [[middle_ellipsis(cell, fit) if n in ids else cell
                      for n, cell in enumerate(line)] for line in cells]
        # what is left is shared among the columns that wrap, so that rich never has to
        # squeeze a header or a number to fit
        spare = max(0, -self.overflow(cells, columns, show_header, compact))
        console.print(_table(cells, columns, title, show_header, compact,
                             _share(spare, natural, floor)))

    def overflow(self, cells: list[list[str]], columns: Sequence[Column], show_header: bool,
                 compact: bool) -> int:
        """How many characters too wide the table is with every text cell wrapped as far as
        it goes: the header words, ids and numbers (which never wrap) must fit."""
        fixed = [[cell if _fixed(col) else "" for col, cell in zip(columns, line, strict=True)]
                 for line in cells]
        console = self.console()
        skeleton = _table(fixed, columns, None, show_header, compact)
        options = console.options.update_width(1_000_000)
        return int(console.measure(skeleton, options=options).maximum - console.width)

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
    def progress(self, label: str, total: int | None = None) -> Iterator[Progress]:
        """A progress bar on stderr when it is a terminal; otherwise a no-op."""
        if not self.terminal.stderr_isatty():
            yield _NoProgress()
            return
        from rich.progress import (
            BarColumn,
            SpinnerColumn,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
        )
        from rich.progress import Progress as RichProgress

        bar = RichProgress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                           TaskProgressColumn(), TimeElapsedColumn(),
                           console=self.console(stderr=True), transient=True)
        with bar:
            task = bar.add_task(label, total=total)
            yield _RichProgress(bar, task)


class RowStream:
    """See :meth:`Output.stream`. Use as a context manager, or call :meth:`close`."""

    def __init__(self, out: Output, columns: Sequence[Column], title: str | None) -> None:
        self.out, self.columns, self.title = out, columns, title
        self.rows: list[dict[str, Any]] = []
        self.count = 0

    def add(self, rows: Sequence[dict[str, Any]]) -> None:
        self.count += len(rows)
        if self.out.json:
            self.out.lines(json_line(row) for row in rows)
        else:
            self.rows.extend(rows)

    def close(self) -> None:
        if self.rows:
            self.out.table(self.rows, self.columns, title=self.title)
            self.rows = []

    def __enter__(self) -> RowStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()  # also on errors: what was done is shown


#: Fewest characters an id is shortened to on a narrow terminal (5 + "…" + 6).
MIN_ID_CHARS = 12
#: Characters each wrapping column is given, if it needs them, before ids are shortened.
WRAP_RESERVE = 16


def middle_ellipsis(text: str, width: int) -> str:
    """``text`` shortened to ``width`` characters by an ellipsis in the middle, which keeps
    the start and the end of an id (both tell ids apart)."""
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head):]


def _min_width(col: Column, show_header: bool) -> int:
    """A column's narrowest: its header's longest word (headers never split in a word)."""
    return max([len(word) for word in col.title.split()] + [1]) if show_header else 1


def _share(spare: int, natural: dict[int, int], floor: dict[int, int]) -> dict[int, int]:
    """Widths of the wrapping columns: each its natural width, or, where ``spare`` (what
    the table can grow by beyond every floor) is short, an even share of it."""
    widths = dict(floor)
    wanted = sorted(natural, key=lambda n: natural[n] - floor[n])
    for left, n in enumerate(wanted):
        extra = min(max(0, natural[n] - floor[n]), spare // (len(wanted) - left))
        widths[n] += extra
        spare -= extra
    return widths


def _table(cells: list[list[str]], columns: Sequence[Column], title: str | None,
           show_header: bool, compact: bool, widths: dict[int, int] | None = None) -> Any:
    from rich.table import Table

    table = Table(title=title, show_header=show_header, header_style="bold",
                  title_justify="left", box=_box(), pad_edge=False,
                  padding=(0, 0) if compact else (0, 1))
    for n, col in enumerate(columns):
        table.add_column(col.title, justify="right" if col.kind == "number" else "left",
                         overflow="fold", no_wrap=_fixed(col),
                         min_width=_min_width(col, show_header),
                         max_width=(widths or {}).get(n))
    for line in cells:
        table.add_row(*line)
    return table


def _fixed(col: Column) -> bool:
    """Whether a column's cells never wrap: numbers and ids."""
    return col.kind == "number" or col.key == "id"


def _box() -> Any:
    from rich import box

    return box.SIMPLE_HEAD


class Progress:
    """What a command sees of a progress bar; a no-op when none is drawn."""

    def advance(self, n: int) -> None:
        """``n`` more units done (the core's ``progress`` callback)."""

    def set(self, completed: int | None, description: str | None = None) -> None:
        """Absolute position (for example bytes read of stdin), and a new label."""


class _NoProgress(Progress):
    pass


class _RichProgress(Progress):
    def __init__(self, bar: Any, task: Any) -> None:
        self.bar, self.task = bar, task

    def advance(self, n: int) -> None:
        self.bar.advance(self.task, n)

    def set(self, completed: int | None, description: str | None = None) -> None:
        changes: dict[str, Any] = {}
        if completed is not None:
            changes["completed"] = completed
        if description is not None:
            changes["description"] = description
        self.bar.update(self.task, **changes)


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
    from .config import ENV_DEBUG

    return os.environ.get(ENV_DEBUG, "") not in ("", "0", "false", "no")
