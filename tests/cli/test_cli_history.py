"""``rq-cli stats --history [--since DURATION]``: JSON lines per bucket from the first
snapshot on (taken here by ``clean``), a table on a terminal, and the refusals (a bad
duration, --since without --history, --history with other modes: exit 2 before any server
is reached)."""

from __future__ import annotations

import pytest

pytest_plugins = ["cli_helpers"]


def test_history_starts_with_the_first_snapshot(cli, r) -> None:  # type: ignore[no-untyped-def]
    assert cli("stats", "q", "--history").stdout == ""  # nothing yet
    empty = cli("stats", "q", "--history", tty=True)
    assert empty.exit_code == 0 and "no history yet for q" in empty.stderr
    assert cli("push", "q", "1", "2", "3").exit_code == 0
    assert cli("clean", "q").exit_code == 0  # the first snapshot: pushed 3
    lines = cli("lease", "q", "-n", "2").stdout
    assert cli("complete", "q", input=lines).exit_code == 0
    assert cli("fail", "q", "--dead", input=cli("lease", "q").stdout).exit_code == 0
    rows = cli("stats", "q", "--history").json
    assert len(rows) == 1
    row = rows[0]
    assert (row["queue"], row["pushed"], row["completed"], row["failed"], row["dead"]) == \
        ("q", 0, 2, 1, 1)
    assert row["at"] % 60 == 0 and 0 <= row["seconds"] <= 120
    assert cli("stats", "q", "--history", "--since", "30d").one["at"] % 3600 == 0  # hourly
    assert r.zcard("q:history") == 1
    table = cli("stats", "q", "--history", "--since", "1h30m", tty=True)
    assert table.exit_code == 0 and "completed" in table.stdout


@pytest.mark.parametrize("args, said", [
    (["--history", "--since", "3x"], "--since '3x' is not a duration"),
    (["--history", "--since", ""], "is not a duration"),
    (["--history", "--since", "0"], "is not a duration"),
    (["--history", "--since", "91d"], "--since must be more than 0 and at most 90 days"),
    (["--since", "1h"], "--since goes with --history"),
    (["--history", "--watch"], "--history is shown alone"),
    (["--history", "--by-tenant"], "--history is shown alone"),
])
def test_history_refusals(cli, args, said) -> None:  # type: ignore[no-untyped-def]
    run = cli("stats", "q", *args, url="redis://127.0.0.1:1")
    assert run.exit_code == 2, run.stderr
    assert said in run.stderr


def test_history_names_its_queues(cli) -> None:  # type: ignore[no-untyped-def]
    run = cli("stats", "--history")
    assert run.exit_code == 2 and "--history reads the history of the queues named" in run.stderr
