"""JSON lines: the one encoder of rq-cli's output rows, and how payload data is written in them.

Payload data (``bytes``) is embedded verbatim when it is a JSON text a reader gets back byte for
byte, else written as a JSON string with ``"raw": true``, or as base64 under ``data_b64`` (the
rules: :mod:`rq_cli.output.render`'s docstring). Rows are encoded with orjson where that gives the
same bytes as the standard library, else by :func:`json_line_text`.
"""

from __future__ import annotations

import base64
import json
from json.encoder import encode_basestring, encode_basestring_ascii
from typing import Any

from ..core.contract.util import TOO_DEEP, json_too_deep


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
            parts.append(encode_basestring_ascii(key + suffix) + ":" + text +
                         (',"raw":true' if raw else ""))
        else:
            parts.append(encode_basestring_ascii(key) + ":" + _value(value))
    return "{" + ",".join(parts) + "}"


def epoch(seconds: float | None) -> float | None:
    """Epoch seconds with millisecond precision (docs/DESIGN.md section 4)."""
    return None if seconds is None else round(seconds, 3)
