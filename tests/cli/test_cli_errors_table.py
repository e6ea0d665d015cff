"""``rq-cli errors`` over several queues and on a terminal (issue 38): with no queue it reads
every configured queue, as ``stats`` does; its table shows each group's pattern (not one
sample error) and shortens the sample id, so that the pattern gets the width at 120 columns."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from cli_helpers import write_config

pytest_plugins = ["cli_helpers"]

#: An error of realistic length: its pattern is 69 characters, wider than the ~33 columns
#: the table left it beside a 32-character sample id and a clock time.
TIMEOUT = "upstream https://billing/v2 timed out after {}ms ({})"


def dead(cli: Any, queue: str, errors: list[str]) -> list[str]:
    """Items of ``queue`` dead-lettered with ``errors``, one each, under 32-character ids."""
    ids = [uuid.uuid4().hex for _ in errors]
    for i in ids:
        assert cli("push", queue, "--id", i, json.dumps({"i": i})).exit_code == 0
    assert cli("lease", queue, "--count", str(len(ids))).exit_code == 0
    for i, error in zip(ids, errors, strict=True):
        assert cli("fail", queue, i, "--dead", "--error", error).exit_code == 0
    return ids


def test_errors_without_a_queue_reads_every_configured_queue(cli: Any,
                                                             tmp_path: Path) -> None:
    write_config(tmp_path, '[queues.mail]\nprefix = "mail"\n\n'
                           '[queues.thumbs]\nprefix = "thumbs"\n')
    dead(cli, "mail", ["smtp 421 from mx.example", "smtp 450 from mx.example"])
    dead(cli, "thumbs", ["cannot open /data/1.png"])
    run = cli("errors")
    assert run.exit_code == 0, run.stderr
    assert [(row["queue"], row["count"], row["pattern"]) for row in run.json] == [
        ("mail", 2, "smtp <n> from mx.example"), ("thumbs", 1, "cannot open /data/<n>.png")]
    table = cli("errors", tty=True, width=120)
    assert table.exit_code == 0 and "mail" in table.stdout and "thumbs" in table.stdout
    # names given: those only, as before
    assert {row["queue"] for row in cli("errors", "thumbs").json} == {"thumbs"}


def test_errors_table_shows_the_pattern_and_short_ids_at_120_columns(cli: Any) -> None:
    ids = dead(cli, "q", [TIMEOUT.format(1000 + k, k) for k in range(3)])
    json_row = cli("errors", "q").one
    pattern = json_row["pattern"]
    assert "<duration>" in pattern and len(pattern) > 55, pattern  # (a long one)
    assert json_row["sample_id"] in ids  # JSON keeps the whole id
    table = cli("errors", "q", tty=True, width=120)
    assert table.exit_code == 0, table.stderr
    lines = table.stdout.splitlines()
    assert any(pattern in line for line in lines), table.stdout  # whole, on one line
    assert not any(TIMEOUT.format(1000 + k, k) in table.stdout for k in range(3))
    assert not any(i in table.stdout for i in ids)  # shortened
    assert any(i[:8] in table.stdout for i in ids)
    assert all(len(line) <= 120 for line in lines)


def test_errors_of_every_queue_goes_on_past_a_server_that_is_down(
        cli: Any, tmp_path: Path, server_url: str, make_server: Any) -> None:
    down = make_server()
    down_url = down.url
    down.stop()
    write_config(tmp_path, f'url = "{server_url}"\n\n[queues.down]\nurl = "{down_url}"\n\n'
                           '[queues.live]\n')
    dead(cli, "live", ["disk full on /var"])
    run = cli("errors", url=None)
    assert run.exit_code == 69, run  # unavailable: one line, after the others' groups
    assert [(row["queue"], row["count"]) for row in run.json] == [("live", 1)]
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("rq-cli: errors: 1 of 2 failed"), lines
