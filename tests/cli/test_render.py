"""rq_cli.output.render: the JSON encoding of payloads, the format decision, human formats."""

from __future__ import annotations

import io
import json
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rq_cli.output import jsonlines, render
from rq_cli.output.render import Column, Output, Terminal


@pytest.mark.parametrize("data, expected", [
    (b'{"a": 1}', {"data": {"a": 1}}),
    (b"[1,2]", {"data": [1, 2]}),
    (b'"s"', {"data": "s"}),
    (b"plain text", {"data": "plain text", "raw": True}),  # not the JSON string "plain text"
    (b"NaN", {"data": "NaN", "raw": True}),  # not JSON (RFC 8259): a string
    (b"\xef\xbb\xbf{}", {"data": "\ufeff{}", "raw": True}),  # a BOM is not JSON either
    (b"\xff\xfe", {"data_b64": "//4="}),
    (b"", {"data": "", "raw": True}),
    # JSON whose exact bytes a reader would not get back from an embedded value: as text
    (b'{"a":\n1}', {"data": '{"a":\n1}', "raw": True}),
    (b' {"a": 1}', {"data": ' {"a": 1}', "raw": True}),
    (b"1\t", {"data": "1\t", "raw": True}),
])
def test_data_encoding(data, expected):
    line = jsonlines.json_line({"data": data})
    assert "\n" not in line
    assert json.loads(line) == expected


def test_valid_json_is_embedded_verbatim():
    line = jsonlines.json_line({"data": b'{"b": 1.50, "a": [ ]}'})
    assert line == '{"data":{"b": 1.50, "a": [ ]}}'


@given(st.binary(max_size=200))
def test_any_bytes_give_one_valid_json_line(data):
    line = jsonlines.json_line({"id": "x", "data": data})
    assert "\n" not in line and "\r" not in line
    obj = json.loads(line)
    if "data_b64" in obj:
        import base64

        assert base64.b64decode(obj["data_b64"]) == data


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
                    max_leaves=10))
def test_json_values_round_trip(value):
    for data in (json.dumps(value).encode(), json.dumps(value, indent=1).encode()):
        row = json.loads(jsonlines.json_line({"data": data}))
        # on one line: embedded; with line breaks: the text itself, marked raw
        assert (json.loads(row["data"]) if row.get("raw") else row["data"]) == value
        assert row.get("raw", False) == (b"\n" in data)


def test_times_have_millisecond_precision():
    assert jsonlines.json_line({"t": 1763767302.0123456}) == '{"t":1763767302.012}'


def test_check_json():
    jsonlines.check_json('  {"a": 1}  ')
    for bad in ("", " ", "{", "1 2", "Infinity", "-Infinity", "NaN", "[1,]"):
        with pytest.raises(ValueError):
            jsonlines.check_json(bad)
    jsonlines.check_json("1" * 5000)  # no int-size limit on validation


def test_format_decision():
    assert Output(Terminal(stdout=False)).json
    assert not Output(Terminal(stdout=True)).json
    assert Output(Terminal(stdout=True), as_json=True).json


def test_table_and_lines(monkeypatch):
    buf = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    monkeypatch.setattr(sys, "stdout", buf)
    Output(Terminal(stdout=False)).rows([{"id": "a", "n": 1}], [Column("id"), Column("n")])
    Output(Terminal(stdout=True, width=80)).rows([{"id": "a", "n": 1}],
                                                  [Column("id"), Column("n")])
    buf.flush()
    text = buf.buffer.getvalue().decode()
    first, rest = text.split("\n", 1)
    assert json.loads(first) == {"id": "a", "n": 1}
    assert "id" in rest and "a" in rest


def test_human_formats():
    assert render.human_duration(5) == "5.0s"
    assert render.human_duration(125) == "2m05s"
    assert render.human_duration(7200) == "2h00m"
    assert render.human_data(b"\x1b[31m") == "\\x1b[31m"
    assert render.human_data(b"x" * 1000).endswith("…")
    assert render.human_data(None) == "(no data)"
    assert "ago" in render.human_time(0)


def test_progress_is_a_no_op_without_a_terminal():
    out = Output(Terminal(stderr=False))
    with out.progress("x") as bar:
        bar.advance(5)
        bar.set(3, "y")
    assert "rich" not in type(bar).__module__


_scalars = (st.none() | st.booleans() | st.integers() | st.text() | st.binary()
            | st.floats(allow_nan=True, allow_infinity=True))
_values = _scalars | st.dictionaries(st.text(), st.integers() | st.floats() | st.text(),
                                     max_size=3) | st.lists(st.text(), max_size=3)


@given(st.dictionaries(st.text(min_size=1), _values, max_size=6))
def test_json_line_is_byte_for_byte_its_pure_python_twin(row):
    """The orjson path (fast) and json_line_text write the same line for any row."""
    assert jsonlines.json_line(row) == jsonlines.json_line_text(row)


@pytest.mark.parametrize("row", [
    {"id": "caf\u00e9", "data": b"{}"},  # non-ASCII text: \u escapes
    {"n": 2**70}, {"t": 1e16}, {"t": float("nan")}, {"t": -0.0},
    {"id": "x", "data": b"\xff", "error": None, "ok": True},
    {"k\u00e9y": 1}, {"data": b'"\\ud800"'}, {"id": "\ud800"},
    {"data": b"hi", "raw": 5}, {"data": b"\xff", "data_b64": 1},
    {"\x1f": b""}, {'"': b"{}"},  # a key JSON escapes, beside payload data
])
def test_json_line_edge_rows_take_the_same_bytes(row):
    assert jsonlines.json_line(row) == jsonlines.json_line_text(row)
