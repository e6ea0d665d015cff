"""A command's output, copied through (:class:`Stream`), and the worker's log lines."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

from ..core.contract.limits import RESULT_MAX
from ..output.render import escape_control
from .poll import Poller

#: Bytes of a command's stderr kept as the item's error.
ERROR_TAIL = 2000
#: Bytes read or written per system call.
CHUNK = 65536
#: The longest line of a command's output held before it goes out (in pieces this long).
LINE_MAX = 65536



@dataclass
class Stream:
    """A pipe from a command, copied through: as it comes (no ``tag``, no ``as_log``), or
    line by line, each with the ``tag`` (``[<id>] ``, several commands at once), or each
    handed to ``as_log`` (the command's stderr as log events, with a JSON log).

    Memory is bounded: a line longer than :data:`LINE_MAX` bytes goes out in pieces of that
    size (the last one shorter), each a line of its own (tagged, or an event), as it comes,
    instead of being held whole (a 60 MB line without a newline cost 210 MB and 25 s)."""

    fd: int
    dst: IO[bytes]
    tag: bytes
    tail: bytearray | None  # stderr: the last ERROR_TAIL bytes, for the error
    partial: bytes = b""
    as_log: Callable[[bytes], None] | None = None  # a line (or a piece) to log, no newline
    keep: bytearray | None = None  # work --result stdout: the first RESULT_MAX + 1 bytes

    def copy(self, sel: Poller) -> bool:
        """Copy what the pipe has now; returns False at its end (closed then)."""
        while self.fd >= 0:
            try:
                chunk = os.read(self.fd, CHUNK)
            except BlockingIOError:
                return True
            except OSError:
                chunk = b""
            if not chunk:
                self.close(sel)
                return False
            if self.tail is not None:
                self.tail += chunk
                del self.tail[:-ERROR_TAIL]
            if self.keep is not None and len(self.keep) <= RESULT_MAX:
                self.keep += chunk[:RESULT_MAX + 1 - len(self.keep)]
            if not self.tag and self.as_log is None:
                self._write(chunk)
                continue
            lines = (self.partial + chunk).split(b"\n")
            self.partial = lines.pop()
            while len(self.partial) > LINE_MAX:  # (at most LINE_MAX bytes held back)
                lines.append(self.partial[:LINE_MAX])
                self.partial = self.partial[LINE_MAX:]
            if lines:
                self._lines([piece for line in lines for piece in _pieces(line)])
        return False

    def close(self, sel: Poller) -> None:
        """Stop copying (the last partial line goes out, tagged, with a newline)."""
        if self.fd < 0:
            return
        if self.partial:
            self._lines([self.partial])
            self.partial = b""
        sel.unregister(self.fd)
        os.close(self.fd)
        self.fd = -1

    def _lines(self, lines: list[bytes]) -> None:
        if self.as_log is not None:
            for line in lines:
                self.as_log(line)
        else:
            self._write(b"".join(self.tag + line + b"\n" for line in lines))

    def _write(self, data: bytes) -> None:
        try:
            self.dst.write(data)
            self.dst.flush()
        except (OSError, ValueError):
            pass


def _pieces(line: bytes) -> list[bytes]:
    """``line`` in pieces of at most LINE_MAX bytes (one piece, usually)."""
    if len(line) <= LINE_MAX:
        return [line]
    return [line[at:at + LINE_MAX] for at in range(0, len(line), LINE_MAX)]


def log_line(entry: dict[str, Any], as_json: bool) -> str:
    """One log line: JSON, or ``key=value`` words for a person. Neither lets a value (an
    item id, a command's stderr) drive the terminal: control characters are escaped, in
    JSON as ``\\u`` escapes (C1 ones too, which JSON itself leaves raw), in words as the
    tables escape them."""
    if as_json:
        text = json.dumps(entry, separators=(",", ":"), ensure_ascii=False)
        return _C1.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return " ".join(f"{k}={escape_control(str(v))}" for k, v in entry.items())


def output_tag(item_id: str) -> bytes:
    """The prefix of a command's output lines (several at once): ``[<id>] ``, the id's
    control characters escaped as the tables do (an id cannot clear the screen)."""
    return f"[{escape_control(item_id)}] ".encode("utf-8", "backslashreplace")


#: C1 control characters (and DEL), which JSON leaves raw
_C1 = re.compile("[\x7f-\x9f]")
