"""Filtered bulk repair from the command line: peek, requeue-dead and purge with
--match/--error/--reason/--older-than/--min-attempts, --dry-run, --limit, --rate, --summary;
bad expressions (exit 2, nothing touched, no server needed), non-JSON payloads, and a run
interrupted with Ctrl-C (SIGINT) that a re-run finishes without moving anything twice."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rq_cli.core.queue import WorkQueue

pytest_plugins = ["cli_helpers"]


def fill_dead(cli, n: int = 6) -> None:
    """Items a0..a<n-1> {"user": "u-<k % 2>", "n": k}, and raw1 (not JSON); dead: a0-a2
    and raw1 with error "timeout after 30s", the rest "bad request"."""
    for k in range(n):
        assert cli("push", "q", "--id", f"a{k}", json.dumps({"user": f"u-{k % 2}", "n": k})
                   ).exit_code == 0
    cli("push", "q", "--raw", "--id", "raw1", "not json")
    cli("lease", "q", "--count", str(n + 1))
    ids = [f"a{k}" for k in range(n)]
    cli("fail", "q", *ids[:3], "raw1", "--dead", "--error", "timeout after 30s")
    cli("fail", "q", *ids[3:], "--dead", "--error", "bad request")


def test_peek_match_and_counts_on_stderr(cli):
    fill_dead(cli)
    run = cli("peek", "q", "--state", "dead", "--match", "user == 'u-1'")
    assert run.exit_code == 0
    assert [row["id"] for row in run.json] == ["a1", "a3", "a5"]
    assert "3 matched of 7 dead scanned, 1 not JSON" in run.stderr
    run = cli("peek", "q", "--state", "dead", "--error", "timeout", "-n", "2")
    assert [row["id"] for row in run.json] == ["a0", "a1"]


def test_requeue_dead_filtered_prints_a_line_per_item(cli, r):
    fill_dead(cli)
    run = cli("requeue-dead", "q", "--match", "user == 'u-1'", "--error", "^timeout")
    assert run.exit_code == 0
    assert run.json == [{"queue": "q", "id": "a1", "state": "dead", "requeued": True,
                         "to": "q"}]
    assert "1 requeued of 1 matched; 7 dead scanned, 1 not JSON" in run.stderr
    assert r.lrange("q:queue", 0, -1) == [b"a1"]
    # run again: nothing moves twice
    again = cli("requeue-dead", "q", "--match", "user == 'u-1'", "--error", "^timeout")
    assert again.exit_code == 0 and again.json == []


def test_requeue_dead_dry_run_count_and_sample(cli, r):
    fill_dead(cli)
    row = cli("requeue-dead", "q", "--match", "n >= `2`", "--dry-run").one
    assert (row["matched"], row["requeued"], row["not_json"], row["dry_run"]) == (4, 0, 1, True)
    assert row["sample"] == ["a2", "a3", "a4", "a5"]
    assert r.zcard("q:dead") == 7


def test_requeue_dead_summary_limit_reason_min_attempts(cli, r):
    fill_dead(cli)
    row = cli("requeue-dead", "q", "--reason", "failed", "--min-attempts", "1", "--limit", "2",
              "--summary").one
    assert (row["requeued"], row["matched"]) == (2, 2)
    assert r.zcard("q:dead") == 5
    assert cli("requeue-dead", "q", "--reason", "expired", "--summary").one["requeued"] == 0


def test_requeue_dead_old_forms_unchanged(cli):
    fill_dead(cli)
    assert cli("requeue-dead", "q", "--older-than", "0", "--limit", "1").one["requeued"] == 1


@pytest.mark.parametrize("args", [
    ["requeue-dead", "q", "--match", "user =="],
    ["requeue-dead", "q", "--match", "nosuch(user)"],
    ["requeue-dead", "q", "--error", "(("],
    ["purge", "q", "--state", "dead", "--match", "[?", "--yes"],
    ["peek", "q", "--match", "a ! b"],
    ["peek", "q", "--reason", "expired"],  # --reason needs the dead state
    ["purge", "q", "--state", "all", "--match", "user", "--yes"],
    ["requeue-dead", "q", "a1", "--match", "user"],
    ["requeue-dead", "q", "--match", "user", "--rate", "0"],
    ["requeue-dead", "q", "--summary"],  # how to report, not which items: no selection
    ["requeue-dead", "q", "--rate", "5"],
])
def test_bad_filters_exit_2_with_one_line_and_touch_nothing(cli, r, args):
    fill_dead(cli)
    before = {k: r.type(k) for k in r.scan_iter()}
    dead = r.zrange("q:dead", 0, -1)
    run = cli(*args)
    assert run.exit_code == 2, run
    assert run.stdout == ""
    assert run.stderr.count("\n") == 1 or "Invalid value for '--rate'" in run.stderr
    assert {k: r.type(k) for k in r.scan_iter()} == before
    assert r.zrange("q:dead", 0, -1) == dead


def test_bad_expression_is_refused_before_connecting(cli):
    run = cli("requeue-dead", "q", "--match", "user ==", url="redis://127.0.0.1:1/0")
    assert run.exit_code == 2
    assert run.stderr.startswith("rq-cli: --match 'user ==' is not a JMESPath expression")
    assert run.stderr.count("\n") == 1


def test_purge_filtered(cli, r):
    for k in range(6):
        cli("push", "q", "--id", f"p{k}", json.dumps({"tenant": "t1" if k < 4 else "t2"}))
    cli("push", "q", "--raw", "--id", "raw", "plain text")
    assert cli("purge", "q", "--match", "tenant == 't1'").exit_code == 2  # no --yes, no tty
    row = cli("purge", "q", "--match", "tenant == 't1'", "--dry-run").one
    assert (row["matched"], row["purged"], row["not_json"]) == (4, 0, 1)
    run = cli("purge", "q", "--match", "tenant == 't1'", "--limit", "3", "--yes")
    assert [x["purged"] for x in run.json] == [True] * 3
    assert r.llen("q:queue") == 4
    row = cli("purge", "q", "--match", "tenant == 't1'", "--yes", "--summary").one
    assert (row["purged"], row["matched"]) == (1, 1)
    assert sorted(r.lrange("q:queue", 0, -1)) == [b"p4", b"p5", b"raw"]
    assert r.get("q:item:p0") is None and r.get("q:item:p4") is not None


def test_purge_filtered_asks_on_a_terminal(cli, r):
    for k in range(3):
        cli("push", "q", "--id", f"p{k}", json.dumps({"k": k}))
    run = cli("purge", "q", "--match", "k > `0`", tty=True, input="n\n")
    assert run.exit_code == 3 and "Delete the 2 matching pending items" in run.stderr
    assert r.llen("q:queue") == 3
    run = cli("purge", "q", "--match", "k > `0`", tty=True, input="y\n")
    assert run.exit_code == 0 and r.lrange("q:queue", 0, -1) == [b"p0"]


def test_progress_bar_on_a_terminal(cli, r, server_url):
    """On a real pseudo-terminal the bar draws its label, what it did and how far the scan
    is (its last frame is drawn before it is wiped: the run's end, not its speed, decides
    what it shows); piped, there is no bar, and the summary is the one JSON line."""
    from test_cli_long_work import wait_exit
    from test_cli_watch import Terminal

    fill_dead(cli)
    term = Terminal(["--url", server_url, "requeue-dead", "q", "--match", "user",
                     "--summary"], cols=120)
    try:
        assert wait_exit(term, 60) == 0, term.text
        drawn = " ".join(term.raw.decode("utf-8", "replace").split())
        assert "requeue-dead q: 6 requeued" in drawn, drawn[-1500:]
        assert "7/7 dead scanned" in drawn, drawn[-1500:]
    finally:
        term.close()
    fill_dead(cli)  # (the same ids, dead again)
    run = cli("requeue-dead", "q", "--match", "user", "--summary")
    assert run.exit_code == 0 and run.one["requeued"] == 6 and run.stderr == ""


def test_counts_as_a_table_on_a_terminal(cli, r):
    fill_dead(cli)
    run = cli("requeue-dead", "q", "--match", "user == 'u-1'", tty=True)
    assert run.exit_code == 0
    lines = run.stdout.splitlines()
    header = next(line for line in lines if "requeued" in line)
    assert "not json" in header and "changed" in header
    values = next(line for line in lines if line.split()[:1] == ["q"])
    assert values.split()[:6] == ["q", "dead", "7", "3", "1", "3"]


def test_ctrl_c_then_rerun_moves_each_item_once(server_url, r, tmp_path: Path):
    """A real process interrupted by SIGINT mid-run: exit 130, each line it printed is an
    item that moved, and a re-run moves exactly the rest."""
    q = WorkQueue(r, "q")
    from rq_cli.core.types import NewItem

    n = 120
    q.push([NewItem(json.dumps({"k": k}).encode(), f"i{k:03d}") for k in range(n)])
    q.lease(n)
    q.fail([f"i{k:03d}" for k in range(n)], dead=True)
    argv = [sys.executable, "-m", "rq_cli", "--no-config", "--url", server_url,
            "requeue-dead", "q", "--match", "k >= `0`", "--rate", "40"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while r.llen("q:queue") < 20 and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    first = [json.loads(line)["id"] for line in out.splitlines()]
    assert b"interrupted" in err and b"run it again" in err
    assert 20 <= len(first) < n
    assert sorted(first) == sorted(x.decode() for x in r.lrange("q:queue", 0, -1))
    rerun = subprocess.run(argv[:-2], capture_output=True, timeout=60)
    assert rerun.returncode == 0
    rest = [json.loads(line)["id"] for line in rerun.stdout.splitlines()]
    assert sorted(first + rest) == [f"i{k:03d}" for k in range(n)]
    assert r.zcard("q:dead") == 0 and r.llen("q:queue") == n


def test_peek_filter_needs_one_state(cli, r):
    fill_dead(cli)
    run = cli("peek", "q", "--state", "all", "--match", "user")
    assert run.exit_code == 2 and "one state" in run.stderr
    run = cli("peek", "q", "--id", "a1", "--match", "user")
    assert run.exit_code == 2 and "not with a filter" in run.stderr


@pytest.mark.parametrize("command", [("peek", "q"), ("purge", "q", "--yes"),
                                     ("requeue-dead", "q")])
@pytest.mark.parametrize("expression", ["!" * 600 + "a", "[" * 600 + "]" * 600,
                                        "a" + "|b" * 3000, "!" * 150 + "a"],
                         ids=["not-600", "brackets-600", "pipes-3000", "not-150"])
def test_an_expression_nested_too_deep_is_a_usage_error(cli, r, command, expression):
    """Hundreds of levels exhaust JMESPath's recursive parser or evaluator: exit 2 with one
    line, as for any other bad expression, and nothing changed (issue 29)."""
    cli("push", "q", "--id", "a", '{"a": 1}')
    before = {k: r.type(k) for k in r.scan_iter()}
    run = cli(*command, "--match", expression)
    assert run.exit_code == 2, run
    assert run.stderr.startswith("rq-cli: --match ") and "nested" in run.stderr, run.stderr
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    assert {k: r.type(k) for k in r.scan_iter()} == before
