"""Small input details: another client's garbage in the history, a --since in other digits,
web --bind addresses that are no address (exit 2 and one line, never exit 1)."""

from __future__ import annotations

import pytest

pytest_plugins = ["cli_helpers"]  # the cli(...) fixture


def test_history_members_with_garbage_values_are_skipped_not_shown_negative(cli, r):
    minute = r.time()[0] // 60
    r.hset("q:counters", mapping={"pushed": 12, "completed": 0})
    r.zadd("q:history", {f"{minute - 3}:10:0:0:0": minute - 3,
                         f"{minute - 2}:-5:0:0:0": minute - 2,  # written by another client
                         f"{minute - 1}:1_0:+1:0:0": minute - 1,
                         f"{minute}:\u0665:0:0:0": minute})  # an Arabic-Indic five
    rows = cli("stats", "q", "--history").json
    assert [row["pushed"] for row in rows] == [2]  # 10 then now 12: the rest skipped


@pytest.mark.parametrize("since", ["\u0661h", "\u0661\u0660m", "1\u0665s", "\uff11h"])
def test_since_takes_ascii_digits_only(cli, since):
    run = cli("stats", "q", "--history", "--since", since, url="redis://127.0.0.1:1")
    assert run.exit_code == 2, run
    assert "is not a duration" in run.stderr and run.stderr.count("\n") == 1


@pytest.mark.parametrize("bind", [
    "127.0.0.1 :7729",  # a space: it once said it would not listen on 127.0.0.1, bind 127.0.0.1
    "127.0.0.1:\u00b2",  # a superscript two
    "a" * 64 + ":8999",  # a label of 64
    "a..b:8999",  # an empty label
    ".:8999",
    "h\u00e9te:8999",
])
def test_web_bind_that_is_no_address_is_exit_2_in_one_line(cli, bind):
    run = cli("web", "q", "--bind", bind, env={"RQ_CLI_WEB_TOKEN": None})
    assert run.exit_code == 2, run
    assert run.stderr.count("\n") == 1 and "--bind" in run.stderr
    assert "internal error" not in run.stderr and "without a token" not in run.stderr
