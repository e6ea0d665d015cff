"""Reading items and ids from arguments and stdin (docs/DESIGN.md section 4, "Contract details").

- A line is the bytes up to ``\\n``; the terminator (``\\n`` or ``\\r\\n``) is not part of it.
- Blank lines (empty or only whitespace) are skipped but counted, so line numbers in errors
  are those of the file.
- Items are stored exactly as given: the line's bytes are never re-serialised.
- A bad line raises :class:`BadInputError` carrying its line number; the caller has already
  handed everything before it to the core, which stores it (``WorkQueue.push_batches``).

This is the hot path of ``push -``: one decode and one scan per line, no per-line objects
beyond the bytes themselves.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import sys
from collections import deque
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any, BinaryIO

from ..core.contract.keys import name_collision
from ..core.contract.limits import MAX_JSON_DEPTH
from ..core.contract.util import TOO_DEEP, check_tenant, id_problem, json_int, json_too_deep
from ..core.types import ItemRef, NewItem
from ..errors import BadInputError, UsageError
from ..output.jsonlines import check_json


def stdin_binary() -> BinaryIO:
    stream: Any = sys.stdin
    return getattr(stream, "buffer", stream)  # type: ignore[no-any-return]


def arg_bytes(arg: str) -> bytes:
    """A command-line argument as the bytes the shell passed (non-UTF-8 survives)."""
    return os.fsencode(arg)


def _strip(line: bytes) -> bytes:
    if line[-1:] == b"\n":
        line = line[:-1]
        if line[-1:] == b"\r":
            line = line[:-1]
    return line


def _json_error(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"not valid JSON: {exc.msg} (column {exc.colno})"
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 (byte {exc.start + 1}); use --raw to push opaque bytes"
    return f"not valid JSON: {exc}"


def check_data(data: bytes, raw: bool, where: str) -> bytes:
    """Validate one item given as an argument."""
    if not raw:
        try:
            check_json(data.decode("utf-8"))
        except ValueError as exc:
            why = _json_error(exc)
            hint = "" if "--raw" in why else "; use --raw for non-JSON data"
            raise BadInputError(f"{where}: {why}{hint}") from None
    return data


def check_result(text: str) -> bytes:
    """``complete --result``'s value as bytes: JSON, at most limits.RESULT_MAX bytes (else
    BadInputError, exit 65)."""
    from ..core.contract.limits import RESULT_MAX

    data = arg_bytes(text)
    try:
        check_json(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        why = _json_error(exc) if isinstance(exc, ValueError) and \
            not isinstance(exc, UnicodeDecodeError) else "not UTF-8"
        raise BadInputError(f"--result: {why}") from None
    if len(data) > RESULT_MAX:
        raise BadInputError(f"--result: {len(data):,} bytes, at most {RESULT_MAX:,} are kept")
    return data


def _fast_json_check() -> Any:
    """orjson's ``loads`` when installed: a fast path that accepts a subset of what the
    standard library's strict decoder accepts (anything it refuses is checked again the slow
    way, which decides and words the error)."""
    try:
        from orjson import loads
    except ImportError:
        return None
    return loads


#: lines read and checked at a time by :func:`push_lines` (its C-level fast path)
LINES_AT_ONCE = 1000


class Place:
    """How far :func:`push_lines` or :func:`push_objects` has read (a push stopped early
    says which input lines it never sent): ``taken`` lines taken from the stream, and where
    the items handed out came from. Kept per chunk of lines, not per item: the line of an
    item is found only when asked (:meth:`line_after`)."""

    def __init__(self) -> None:
        self.taken = 0  # lines taken from the stream
        self.before = 0  # lines before ``chunk``
        self.items_before = 0  # items handed out before ``chunk``
        self.chunk: list[bytes] = []  # push_lines: the lines its items are being taken from
        self.last = 0  # push_objects: the line of the last item handed out
        self.items = 0  # push_objects: items handed out

    def line_after(self, items: int) -> int | None:
        """The input line after the one that gave item number ``items`` (the first line not
        taken into the first ``items`` items), where the reader has handed out exactly
        ``items`` items (what a consumer that stopped after taking them sees), else None."""
        if items == 0:
            return 1
        if not self.chunk:  # push_objects (or push_lines before its first chunk)
            return self.last + 1 if items == self.items else None
        k = items - self.items_before
        if k <= 0:
            return None
        for n, line in enumerate(self.chunk):
            if line.strip():  # (an item; blank lines are skipped)
                k -= 1
                if k == 0:
                    return self.before + n + 2
        return None


def push_lines(stream: Iterable[bytes], *, raw: bool = False,
               place: Place | None = None) -> Iterator[bytes]:
    """Items of ``push -``: each non-blank line, validated as JSON unless ``raw``.

    Lines are taken LINES_AT_ONCE at a time and, where orjson is installed, checked with no
    Python code run per line (the terminators cut in one split, the lines parsed in one
    ``map``); a chunk with a blank, bad, CRLF or long line goes line by line instead
    (:func:`_line_by_line`), which decides, skips and words its errors as before.
    ``place`` is kept up to date (per chunk)."""
    fast = None if raw else _fast_json_check()
    source = iter(stream)
    number = 0  # lines read before the chunk
    place = place or Place()
    items = 0  # items handed out before the chunk
    while chunk := list(islice(source, LINES_AT_ONCE)):
        place.before, place.items_before, place.chunk = number, items, chunk
        place.taken = number + len(chunk)
        lines = _cut(chunk) if fast is not None else None
        if lines is not None and fast is not None:
            try:
                deque(map(fast, lines), maxlen=0)
            except ValueError:  # orjson.JSONDecodeError (a blank line too): line by line
                lines = None
        if lines is None:
            for item in _line_by_line(chunk, number, raw, fast):
                items += 1
                yield item
        else:
            yield from lines
            items += len(lines)
        number += len(chunk)


def _cut(chunk: list[bytes]) -> list[bytes] | None:
    """``chunk``'s lines without their terminators, cut in one split, or None where that
    cannot be done so: a line not ending in ``\n`` (but the input's last), a ``\r`` or a
    line long enough to nest deeper than MAX_JSON_DEPTH (line by line then)."""
    joined = b"".join(chunk)
    if b"\r" in joined:
        return None
    lines = joined.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    if len(lines) != len(chunk) or max(map(len, lines)) > MAX_JSON_DEPTH:
        return None
    return lines


def _line_by_line(chunk: Iterable[bytes], before: int, raw: bool,
                  fast: Any) -> Iterator[bytes]:
    """The items of ``chunk``'s lines, one at a time; ``before`` lines came before it."""
    check = check_json
    for number, line in enumerate(chunk, before + 1):
        if line[-1:] == b"\n":
            line = line[:-1]
            if line[-1:] == b"\r":
                line = line[:-1]
        if raw:
            if not line or line.isspace():
                continue
            yield line
            continue
        if fast is not None:
            try:
                fast(line)
            except ValueError:  # orjson.JSONDecodeError: let the strict decoder decide
                pass
            else:
                # (else the strict check refuses it; json_too_deep's first tests, inline:
                # most lines are too short to nest that deep, and a call per line costs)
                if len(line) <= MAX_JSON_DEPTH or line.count(b"{") + line.count(
                        b"[") <= MAX_JSON_DEPTH or not json_too_deep(line):
                    yield line
                    continue
        try:
            check(line.decode("utf-8"))
        except ValueError as exc:  # also UnicodeDecodeError
            if not line or line.isspace():
                continue  # blank: skipped, still counted
            raise BadInputError(_json_error(exc), line=number) from None
        yield line


def push_objects(stream: Iterable[bytes], *, raw: bool = False,
                 place: Place | None = None) -> Iterator[NewItem]:
    """Items of ``push --with-ids -``: lines ``{"id": ..., "data": ...}`` as lease/peek print.

    ``data`` is stored as the exact JSON text of the value; a string value marked ``"raw":
    true`` (what lease and peek print for data that is not JSON), or any string value with
    ``--raw``, is stored as the string itself. ``data_b64`` (what peek prints for non-UTF-8 data) is
    decoded. A missing or null ``id`` gets a new one (or the data's hash, --id-from-data).
    ``place`` is kept up to date (per item).
    """
    place = place or Place()
    for number, line in enumerate(stream, 1):
        place.taken = number
        line = _strip(line)
        if not line or line.isspace():
            continue
        try:
            item = object_item(line, raw)
        except BadInputError as exc:
            raise BadInputError(str(exc), line=number) from None
        place.last, place.items = number, place.items + 1
        yield item


def object_item(line: bytes, raw: bool) -> NewItem:
    try:
        text = line.decode("utf-8")
        fields = split_object(text)
    except ValueError as exc:
        raise BadInputError(_json_error(exc)) from None
    item_id = fields.get("id", (None, ""))[0]
    if item_id is not None:
        check_input_id(item_id)
        why = name_collision(item_id)
        if why:
            raise BadInputError(f"item id {item_id!r} cannot be used: {why}")
    if "data" in fields and "data_b64" in fields:
        raise BadInputError('give "data" or "data_b64", not both')
    if "data_b64" in fields:
        value = fields["data_b64"][0]
        try:
            data = base64.b64decode(value, validate=True) if isinstance(value, str) else None
        except (binascii.Error, ValueError):
            data = None
        if data is None:
            raise BadInputError('"data_b64" must be a base64 string')
    elif "data" in fields:
        value, source = fields["data"]
        marked = fields.get("raw", (False, ""))[0]
        if marked not in (True, False):
            raise BadInputError('"raw" must be true or false')
        if marked and not isinstance(value, str):
            raise BadInputError('"raw": true needs "data" to be a string (the text itself)')
        if (raw or marked) and isinstance(value, str):
            try:
                data = value.encode("utf-8")
            except UnicodeEncodeError:
                raise BadInputError('"data" holds a lone surrogate escape') from None
        else:
            data = source.encode("utf-8")
    else:
        raise BadInputError('expected an object {"id": ..., "data": ...} (no "data" field)')
    tenant = fields.get("tenant", (None, ""))[0]
    if tenant is not None:
        if not isinstance(tenant, str):
            raise BadInputError(f'"tenant" must be a string, not {type(tenant).__name__}')
        try:
            check_tenant(tenant)
        except UsageError as exc:
            raise BadInputError(str(exc)) from None
    return NewItem(data=data, id=item_id, tenant=tenant)


def check_utf8(value: str, what: str) -> str:
    """``value``, unless it is not UTF-8 text: a command-line argument whose bytes are not
    UTF-8 (Python keeps them as lone surrogates), or a JSON string with a lone surrogate
    escape. Queue names and ids are stored as UTF-8: refused (exit 65), not a crash."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        shown = value.encode("utf-8", "surrogateescape" if _escaped(value) else "surrogatepass")
        raise BadInputError(f"{what} {shown.decode('ascii', 'backslashreplace')!s} is not "
                            f"valid UTF-8 text") from None
    return value


def _escaped(value: str) -> bool:
    """Whether every lone surrogate of ``value`` is a byte kept by surrogateescape."""
    return all(not 0xD800 <= ord(c) <= 0xDFFF or 0xDC80 <= ord(c) <= 0xDCFF for c in value)


def check_input_id(item_id: Any) -> str:
    """``item_id`` as read from the input (an argument, a line, a JSON field), or
    BadInputError (65) when it is no item id: the engine's rule
    (:func:`rq_cli.core.contract.util.check_id`, a UsageError) worded as bad input."""
    if not isinstance(item_id, str):
        raise BadInputError(f'"id" must be a string, not {type(item_id).__name__}')
    check_utf8(item_id, "the item id")
    why = id_problem(item_id)  # (the engine's rule, worded here as bad input)
    if why:
        raise BadInputError(why)
    return item_id


# -- ids and refs -------------------------------------------------------------------------------
def read_refs(stream: Iterable[bytes]) -> Iterator[tuple[str | None, ItemRef]]:
    """(queue or None, ref) for each line: a plain id, a JSON string, or a JSON object with
    ``id`` and optionally ``session``, ``queue`` (the lines lease and peek print) and
    ``result`` (any JSON: its text is the ref's result, for complete)."""
    for number, line in enumerate(stream, 1):
        line = _strip(line)
        if not line or line.isspace():
            continue
        try:
            yield parse_ref(line)
        except BadInputError as exc:
            raise BadInputError(str(exc), line=number) from None


def parse_ref(line: bytes) -> tuple[str | None, ItemRef]:
    first = line.lstrip()[:1]
    if first not in (b"{", b'"'):
        try:
            return None, ItemRef(check_input_id(line.decode("utf-8")))
        except UnicodeDecodeError:
            raise BadInputError("an id must be UTF-8 text") from None
    try:
        text = line.decode("utf-8")
        if first == b'"':
            return None, ItemRef(check_input_id(json.loads(text)))
        fields = split_object(text)
    except ValueError as exc:
        raise BadInputError(_json_error(exc)) from None
    if "id" not in fields:
        raise BadInputError('a JSON line needs an "id" field')
    item_id = check_input_id(fields["id"][0])
    session = fields.get("session", (None, ""))[0]
    queue = fields.get("queue", (None, ""))[0]
    if session is not None and not isinstance(session, str):
        raise BadInputError('"session" must be a string')
    if queue is not None and not isinstance(queue, str):
        raise BadInputError('"queue" must be a string')
    result = fields["result"][1].encode() if "result" in fields else None
    return queue or None, ItemRef(item_id, session or None, result)


# -- a JSON object, keeping each value's exact text -----------------------------------------------
def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_int=json_int)
# json.decoder's own helpers (public names, missing from typeshed)
_ws: Any = json.decoder.WHITESPACE.match  # type: ignore[attr-defined]
scanstring: Any = json.decoder.scanstring  # type: ignore[attr-defined]


def split_object(text: str) -> dict[str, tuple[Any, str]]:
    """Parse a JSON object into {key: (value, the value's exact source text)}.

    Raises ValueError (JSONDecodeError) like ``json.loads`` for anything that is not one
    JSON object. The source text lets ``push --with-ids`` store data exactly as written.
    """
    scan = _DECODER.scan_once  # type: ignore[attr-defined]
    if json_too_deep(text, MAX_JSON_DEPTH + 1):  # (the line's object is one level more)
        raise ValueError(TOO_DEEP)
    i = _ws(text, 0).end()
    if text[i:i + 1] != "{":
        raise json.JSONDecodeError('expected a JSON object {"id": ..., "data": ...}', text, i)
    i = _ws(text, i + 1).end()
    out: dict[str, tuple[Any, str]] = {}
    if text[i:i + 1] == "}":
        i += 1
    else:
        while True:
            if text[i:i + 1] != '"':
                raise json.JSONDecodeError("expected a property name in double quotes", text, i)
            key, i = scanstring(text, i + 1)
            i = _ws(text, i).end()
            if text[i:i + 1] != ":":
                raise json.JSONDecodeError("expected ':'", text, i)
            i = _ws(text, i + 1).end()
            try:
                value, end = scan(text, i)
            except StopIteration:
                raise json.JSONDecodeError("expected a value", text, i) from None
            except RecursionError:
                raise ValueError(TOO_DEEP) from None
            out[key] = (value, text[i:end])
            i = _ws(text, end).end()
            sep = text[i:i + 1]
            if sep == ",":
                i = _ws(text, i + 1).end()
            elif sep == "}":
                i += 1
                break
            else:
                raise json.JSONDecodeError("expected ',' or '}'", text, i)
    if _ws(text, i).end() != len(text):
        raise json.JSONDecodeError("extra data after the object", text, i)
    return out
