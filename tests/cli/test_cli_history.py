"""``rq-cli stats --history [--since DURATION]``: JSON lines per bucket from the first
snapshot on (taken here by ``push``), a table on a terminal, and the refusals (a bad
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
    assert cli("clean", "q").exit_code == 0
    lines = cli("lease", "q", "-n", "2").stdout
    assert cli("complete", "q", input=lines).exit_code == 0
    assert cli("fail", "q", "--dead", input=cli("lease", "q").stdout).exit_code == 0
    # the first snapshot, nothing counted, is the push's (its minute; the run may cross one)
    rows = cli("stats", "q", "--history").json
    assert 1 <= len(rows) <= 2 and {row["queue"] for row in rows} == {"q"}
    assert [sum(row[f] for row in rows) for f in ("pushed", "completed", "failed", "dead")] \
        == [3, 2, 1, 1]
    assert all(row["at"] % 60 == 0 and 0 <= row["seconds"] <= 120 for row in rows)
    assert cli("stats", "q", "--history", "--since", "30d").json[0]["at"] % 3600 == 0  # hourly
    assert 1 <= r.zcard("q:history") <= 2
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
