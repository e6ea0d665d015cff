"""The audit trail (issue 38): every repair made from the CLI (requeue, purge, cancel, pause,
resume, reshard) is recorded per queue, bounded, with when, what (the command line, passwords
masked), how many and from where; ``rq-cli audit QUEUE`` prints it as JSON lines, newest
first. Reads and dry runs record nothing; a sharded queue keeps one trail."""

from __future__ import annotations

import getpass
import json
import socket
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import write_config

from rq_cli.core.contract.limits import AUDIT_KEPT
from rq_cli.core.operations.audit import By, read_audit, record
from rq_cli.core.queue import WorkQueue

pytest_plugins = ["cli_helpers"]


def dead(cli: Any, queue: str, n: int) -> list[str]:
    """``n`` dead items of ``queue`` (their ids)."""
    ids = [f"{queue}-d{k}" for k in range(n)]
    for i in ids:
        assert cli("push", queue, "--id", i, json.dumps({"k": i})).exit_code == 0
    assert cli("lease", queue, "--count", str(n)).exit_code == 0
    assert cli("fail", queue, *ids, "--dead", "--error", "boom").exit_code == 0
    return ids


def test_every_cli_repair_is_recorded_newest_first(cli: Any, server_url: str) -> None:
    dead(cli, "q", 5)
    assert cli("requeue-dead", "q", "--limit", "2").exit_code == 0
    assert cli("purge", "q", "--state", "dead", "--yes").exit_code == 0
    assert cli("push", "q", "--id", "c1", "{}").exit_code == 0
    assert cli("cancel", "q", "c1").exit_code == 0
    assert cli("pause", "q").exit_code == 0
    assert cli("resume", "q").exit_code == 0
    assert cli("requeue-dead", "q", "--all").exit_code == 0  # c1, cancelled
    run = cli("audit", "q")
    assert run.exit_code == 0, run.stderr
    rows = run.json
    assert [(row["action"], row["count"]) for row in rows] == [
        ("requeue", 1), ("resume", 1), ("pause", 1), ("cancel", 1), ("purge", 3),
        ("requeue", 2)]
    assert rows[5]["command"] == f"rq-cli --url {server_url} requeue-dead q --limit 2"
    assert rows[4]["command"].endswith("purge q --state dead --yes")
    assert all((row["queue"], row["host"], row["user"], row["token"], row["via"]) ==
               ("q", socket.gethostname(), getpass.getuser(), None, "cli") for row in rows)
    assert all(b["at"] >= a["at"] for a, b in zip(rows[1:], rows, strict=False))
    assert [row["action"] for row in cli("audit", "q", "--limit", "2").json] == \
        ["requeue", "resume"]
    table = cli("audit", "q", tty=True, width=120)
    assert table.exit_code == 0 and "purge" in table.stdout and "requeue-dead" in table.stdout


def test_reads_dry_runs_and_repairs_of_nothing_record_nothing(cli: Any, r: Any) -> None:
    dead(cli, "q", 2)
    for args in (["purge", "q", "--state", "dead", "--dry-run"],
                 ["requeue-dead", "q", "--all", "--dry-run"], ["stats", "q"],
                 ["peek", "q", "--state", "dead"], ["errors", "q"],
                 ["purge", "q", "--state", "delayed", "--yes"]):  # (none delayed)
        assert cli(*args).exit_code == 0, args
    assert not r.exists("q:audit")
    empty = cli("audit", "q", tty=True)
    assert empty.exit_code == 0 and "no repairs recorded for q" in empty.stderr
    assert cli("audit", "q").stdout == ""


def test_a_filtered_repair_is_one_entry_with_its_total(cli: Any) -> None:
    dead(cli, "q", 30)
    run = cli("purge", "q", "--state", "dead", "--match", "k != 'q-d0'", "--yes")
    assert run.exit_code == 0, run.stderr
    (row,) = cli("audit", "q").json
    assert (row["action"], row["count"]) == ("purge", 29)
    assert "--match 'k != '\"'\"'q-d0'\"'\"''" in row["command"]


def test_the_trail_is_bounded(r: Any) -> None:
    wq = WorkQueue(r, "q")
    by = By("h", "u", "bearer", "web")
    for n in range(AUDIT_KEPT + 5):
        record(wq, "purge", f"rq-cli purge q  # {n}", n + 1, by)
    assert r.llen("q:audit") == AUDIT_KEPT
    newest = read_audit(wq, 2)
    assert [e["count"] for e in newest] == [AUDIT_KEPT + 5, AUDIT_KEPT + 4]
    assert read_audit(wq)[-1]["count"] == 6  # the 5 oldest dropped


@pytest.mark.parametrize("limit", ["0", "1001", "x"])
def test_audit_refuses_a_bad_limit(cli: Any, limit: str) -> None:
    run = cli("audit", "q", "--limit", limit, url="redis://127.0.0.1:1")
    assert run.exit_code == 2, run
    assert len(run.stderr.splitlines()) == 1


def test_a_sharded_queue_keeps_one_trail(cli: Any, r: Any, tmp_path: Path) -> None:
    write_config(tmp_path, '[queues.jobs]\nprefix = "jobs"\nshards = 3\n')
    assert cli("reshard", "jobs", "3").exit_code == 0
    lines = "".join(f'{{"n": {n}}}\n' for n in range(12))
    assert cli("push", "jobs", "-", input=lines).exit_code == 0
    assert cli("purge", "jobs", "--yes").exit_code == 0
    assert cli("pause", "jobs").exit_code == 0
    rows = cli("audit", "jobs").json
    assert [(row["action"], row["count"]) for row in rows] == [
        ("pause", 3), ("purge", 12), ("reshard", 3)]  # pause: each of the 3 shards
    assert r.llen("jobs:audit") == 3


def test_limits_set_and_cleared_are_recorded_and_a_show_is_not(cli: Any, r: Any) -> None:
    assert cli("push", "q", "{}").exit_code == 0
    assert cli("limit", "q").exit_code == 0  # (shows: no entry)
    assert not r.exists("q:audit")
    assert cli("limit", "q", "--rate", "20/s").exit_code == 0
    assert cli("limit", "q", "--clear").exit_code == 0
    rows = cli("audit", "q").json
    assert [(row["action"], row["count"]) for row in rows] == [("limits", 1), ("limits", 1)]
    assert rows[0]["command"].endswith("limit q --clear")
    assert rows[1]["command"].endswith("limit q --rate 20/s")


def test_a_password_in_the_command_line_is_masked_in_the_trail(cli: Any, make_server: Any,
                                                                tmp_path: Path) -> None:
    srv = make_server(requirepass="hunter2secret")
    url = srv.url.replace("redis://", "redis://:hunter2secret@")
    assert cli("push", "q", "{}", url=url).exit_code == 0
    assert cli("pause", "q", url=url).exit_code == 0
    run = cli("audit", "q", url=url)
    assert run.exit_code == 0, run.stderr
    assert "hunter2secret" not in run.stdout and ":***@" in run.one["command"]
