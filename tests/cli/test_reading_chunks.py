"""``push -``'s reader (rq_cli.cli.reading.push_lines) takes LINES_AT_ONCE lines at a time on
its fast path: every way a chunk leaves that path (a blank, bad, CRLF, long or unterminated
line, anywhere in any chunk) gives the items and the line numbers of the line-by-line reader."""

from __future__ import annotations

import io
import json

import pytest

from rq_cli.cli import reading
from rq_cli.core.contract.limits import MAX_JSON_DEPTH
from rq_cli.errors import BadInputError

N = reading.LINES_AT_ONCE


def items(text: bytes, raw: bool = False) -> list[bytes]:
    return list(reading.push_lines(io.BytesIO(text), raw=raw))


def lines(n: int) -> list[bytes]:
    return [json.dumps({"n": i}).encode() for i in range(n)]


@pytest.mark.parametrize("at", [0, 1, N - 1, N, N + 1, 2 * N - 1])
def test_a_bad_line_anywhere_keeps_the_items_before_it_and_its_number(at):
    good = lines(2 * N + 5)
    text = b"".join(g + b"\n" for g in good[:at]) + b"{oops\n" + b"".join(
        g + b"\n" for g in good[at:])
    got: list[bytes] = []
    with pytest.raises(BadInputError) as caught:
        for item in reading.push_lines(io.BytesIO(text)):
            got.append(item)
    assert got == good[:at]
    assert caught.value.line == at + 1


@pytest.mark.parametrize("at", [0, N - 1, N, 2 * N - 1])
def test_blank_and_crlf_lines_in_any_chunk(at):
    good = lines(2 * N)
    text = [g + b"\n" for g in good]
    text.insert(at, b"   \n")
    text[at + 1] = text[at + 1][:-1] + b"\r\n"
    assert items(b"".join(text)) == good


def test_the_last_line_without_a_terminator_and_a_lone_cr_kept():
    good = lines(N + 3)
    assert items(b"\n".join(good)) == good
    # a CR that is not part of a line's terminator is the data's (JSON whitespace here)
    assert items(b'"a"\r\r\n[1]\n') == [b'"a"\r', b"[1]"]


def test_a_line_nesting_too_deep_is_refused_in_any_chunk():
    deep = b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1)
    ok_long = b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH  # longer than the depth: checked
    good = lines(N + 2)
    assert items(b"".join(g + b"\n" for g in good) + ok_long + b"\n") == [*good, ok_long]
    with pytest.raises(BadInputError) as caught:
        items(b"".join(g + b"\n" for g in good) + deep + b"\n")
    assert caught.value.line == N + 3


def test_raw_lines_skip_only_blanks():
    assert items(b"not json\n\n  \n\xff\n" * (N // 2 + 1), raw=True) == [
        b"not json", b"\xff"] * (N // 2 + 1)
