"""Masking secrets in text is linear in the text, however long a word.

The sizes here are a million characters: a quadratic pattern (the old ``_URL_IN_TEXT`` took
5.8 s on 20,000 characters) would take hours on them, well past the suite's pytest-timeout,
while a linear one takes milliseconds. Nothing is timed.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rq_cli.connection import urls
from rq_cli.connection.urls import mask_url, mask_urls_in
from rq_cli.ops.scrub import scrub

pytest_plugins = ["cli_helpers"]  # the cli(...) fixture

N = 1_000_000

#: Words that made one of the scrubbing patterns backtrack over the rest of the word from each
#: of its characters (or over every split of a query parameter's name).
HOSTILE = [
    "X" * N,  # a scheme-like run that never reaches "/"
    "a-" * (N // 2),
    "1" * N + "a",
    "redis://h/?" + "pass" * (N // 4),  # a parameter name holding a secret word, no "="
    "redis://h/" + "?pass" * (N // 5),
    "redis://h/?password=" + "?pass=" * (N // 6),
    "?" * N,
]


@pytest.mark.parametrize("word", HOSTILE, ids=lambda w: f"{w[:12]!r}x{len(w)}")
def test_a_million_character_word_is_scrubbed_and_a_url_after_it_still_masked(word):
    text = f"{word} then redis://user:hunter2@host:6379/0?password=pw2&token=t3 ends"
    masked = scrub(text, None)
    assert masked.endswith(" then redis://user:***@host:6379/0?password=***&token=*** ends")
    assert "hunter2" not in masked and "pw2" not in masked and "t3 " not in masked


def test_a_long_url_is_masked_whole():
    url = "redis://user:" + "p" * N + "@host/0?" + "x" * N + "=1&secret=" + "s" * N
    assert mask_url(url) == "redis://user:***@host/0?" + "x" * N + "=1&secret=***"


#: The pattern before: what it found must still be found.
OLD_URL_IN_TEXT = r"[A-Za-z][A-Za-z0-9+.-]*:?/+\S+"


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="ab1+.-:/ @?=x\n", max_size=30))
def test_the_urls_found_are_those_the_quadratic_pattern_found(text):
    old = [(m.start(), m.end()) for m in re.finditer(OLD_URL_IN_TEXT, text)]
    new = [m.span("url") for m in re.finditer(urls._URL_IN_TEXT, text)]
    assert new == old
    masked = mask_urls_in(text)
    assert masked == re.sub(OLD_URL_IN_TEXT, lambda m: mask_url(m.group(0)), text)


def test_error_group_with_a_huge_word_is_one_line_and_exit_2(cli):
    run = cli("peek", "q", "--error-group", "X" * N)
    assert run.exit_code == 2, run
    assert run.stderr.count("\n") == 1 and run.stderr.startswith("rq-cli: --error-group")
