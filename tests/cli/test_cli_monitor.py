"""rq-cli stats --format prometheus (parsed with prometheus-client) and stats --check."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_helpers import write_config
from prometheus_client.parser import text_string_to_metric_families

from rq_cli.core.contract.keys import COUNTER_FIELDS
from rq_cli.core.queue import WorkQueue
from rq_cli.output.metrics import Thresholds, metric_names

pytest_plugins = ["cli_helpers"]  # the cli(...) fixture


def families(text: str) -> dict[str, object]:
    return {f.name: f for f in text_string_to_metric_families(text)}


def values(family, **labels) -> list[float]:
    return [s.value for s in family.samples
            if all(s.labels.get(k) == v for k, v in labels.items())]


# -- Prometheus -----------------------------------------------------------------------------------
def test_prometheus_exposition_parses_with_every_metric(cli, r, tmp_path):
    write_config(tmp_path, '[queues.emails]\nprefix = "app:{emails}"\n[queues.jobs]\n')
    q = WorkQueue(r, "app:{emails}")
    q.push([b"1", b"2", b"3", b"4"])
    leased = q.lease(2, lease_seconds=0.05)
    q.fail([leased[0].id], dead=True)
    q.push([b"later"], delay=60)
    q.pause()
    time.sleep(0.1)  # the other lease runs out: abandoned
    run = cli("stats", "--format", "prometheus")
    assert run.exit_code == 0, run
    found = families(run.stdout)
    assert {f"rq_cli_{n}_total" for n in COUNTER_FIELDS} <= {
        s.name for f in found.values() for s in f.samples}
    assert {f.name for f in found.values()} == {
        n.removesuffix("_total") for n in metric_names()}
    items = found["rq_cli_items"]
    assert items.type == "gauge"
    emails = {"queue": "emails", "prefix": "app:{emails}"}
    by_state = {s.labels["state"]: s.value for s in items.samples
                if s.labels["queue"] == "emails"}
    assert by_state == {"pending": 2, "processing": 1, "delayed": 1, "dead": 1}
    assert values(found["rq_cli_abandoned_leases"], **emails) == [1]
    assert values(found["rq_cli_paused"], **emails) == [1]
    assert values(found["rq_cli_up"], **emails) == [1]
    assert values(found["rq_cli_oldest_pending_age_seconds"], **emails)[0] > 0
    pushed = found["rq_cli_pushed"]
    assert pushed.type == "counter"
    assert values(pushed, **emails) == [5]
    assert values(found["rq_cli_dead"], **emails) == [1]
    assert values(found["rq_cli_failed"], queue="jobs") == [0]  # every counter, from zero
    # an empty queue: nothing pending is 0 seconds old
    assert values(found["rq_cli_oldest_pending_age_seconds"], queue="jobs") == [0]
    # base units and names as Prometheus asks
    for name in metric_names():
        assert re.fullmatch(r"rq_cli_[a-z_]+", name)
        assert not name.endswith("_ms")


def test_prometheus_label_values_are_escaped(cli, r):
    prefix = 'we"ird\\queue'
    WorkQueue(r, prefix).push([b"1"])
    run = cli("stats", prefix, "--format", "prometheus")
    assert run.exit_code == 0
    found = families(run.stdout)
    assert values(found["rq_cli_items"], queue=prefix, prefix=prefix, state="pending") == [1]


def test_prometheus_reports_an_unreachable_queue_as_down(cli, make_server, r):
    gone = make_server()
    url = gone.url
    gone.stop()
    run = cli("stats", "q", "--format", "prometheus", url=url)
    assert run.exit_code == 0, run  # the textfile stays fresh; rq_cli_up says what happened
    found = families(run.stdout)
    assert values(found["rq_cli_up"], queue="q") == [0]
    assert values(found["rq_cli_items"], queue="q") == []
    assert values(found["rq_cli_scrape_error"], server=url) == [1]
    assert "q: cannot connect" in run.stderr and len(run.stderr.splitlines()) == 1


def test_prometheus_outage_in_discovery_mode_says_so(cli, make_server):
    """No config, no QUEUE (the manual's cron line): the server's queues cannot even be
    listed, and the file still says so, exit 0."""
    gone = make_server()
    url = gone.url
    gone.stop()
    run = cli("stats", "--format", "prometheus", url=url)
    assert run.exit_code == 0, run
    found = families(run.stdout)
    assert values(found["rq_cli_up"]) == [0]
    assert values(found["rq_cli_up"], queue="", prefix="") == [0]
    assert values(found["rq_cli_scrape_error"], server=url) == [1]
    assert run.stderr.startswith(f"rq-cli: stats: cannot connect to {url}")
    assert len(run.stderr.splitlines()) == 1


def test_prometheus_outage_in_config_mode_says_so(cli, make_server, tmp_path):
    up = make_server()
    gone = make_server()
    down = gone.url
    gone.stop()
    write_config(tmp_path, f'[queues.emails]\nurl = "{down}"\n'
                           f'[queues.sms]\nurl = "{up.url}"\n')
    WorkQueue(up.client(), "sms").push([b"1"])
    run = cli("stats", "--format", "prometheus", url=None)
    assert run.exit_code == 0, run
    found = families(run.stdout)
    assert values(found["rq_cli_up"], queue="emails") == [0]
    assert values(found["rq_cli_up"], queue="sms") == [1]
    assert values(found["rq_cli_scrape_error"], server=down) == [1]
    assert values(found["rq_cli_scrape_error"], server=up.url) == [0]
    assert values(found["rq_cli_items"], queue="sms", state="pending") == [1]


def test_prometheus_masks_the_password_in_the_server_label(cli, make_server):
    gone = make_server()
    port = gone.port
    gone.stop()
    run = cli("stats", "q", "--format", "prometheus", url=f"redis://:s3cret@127.0.0.1:{port}/0")
    assert run.exit_code == 0
    assert "s3cret" not in run.stdout + run.stderr
    assert values(families(run.stdout)["rq_cli_scrape_error"],
                  server=f"redis://:***@127.0.0.1:{port}/0") == [1]


def manual_cron_line() -> str:
    text = (Path(__file__).resolve().parents[2] / "docs" / "commands.md").read_text()
    lines = [line for line in text.splitlines()
             if line.startswith("* * * * * /home/ann/.local/bin/rq-cli stats --format prometheus")]
    assert len(lines) == 1, lines
    return lines[0].split(" ", 5)[5]  # the command, without the schedule


@pytest.mark.parametrize("down", [True, False])
def test_the_manual_cron_line_replaces_the_file(make_server, tmp_path, down):
    """The manual's exact line, run by sh as cron runs it, in discovery mode: an outage
    replaces the last good file with one that says so, and leaves no temporary file."""
    srv = make_server()
    url = srv.url
    WorkQueue(srv.client(), "jobs").push([b"1"])
    if down:
        srv.stop()
    textfile = tmp_path / "textfile"
    textfile.mkdir()
    target = textfile / "rq-cli.prom"
    target.write_text('rq_cli_up{queue="jobs",prefix="jobs"} 1\n')  # the last good values
    line = manual_cron_line().replace("/var/lib/node_exporter/textfile", str(textfile))
    # (the manual names rq-cli by its absolute path, as cron needs: here, the installed one)
    line = line.replace("/home/ann/.local/bin/rq-cli",
                        str(Path(sys.executable).with_name("rq-cli")))
    work = tmp_path / "cwd"
    work.mkdir()
    env = {"PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "RQ_CLI_URL": url,
           "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path)}
    done = subprocess.run(["sh", "-c", line], cwd=work, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done
    found = families(target.read_text())
    assert values(found["rq_cli_up"]) == ([0] if down else [1])
    assert values(found["rq_cli_scrape_error"], server=url) == ([1] if down else [0])
    assert sorted(p.name for p in textfile.iterdir()) == ["rq-cli.prom"]


# -- --check --------------------------------------------------------------------------------------
def test_check_exits_0_and_prints_nothing_when_all_hold(cli):
    cli("push", "q", "1", "2")
    run = cli("stats", "q", "--check", "--max-pending", "2", "--max-dead", "0",
              "--max-age", "3600", "--max-abandoned", "0")
    assert (run.exit_code, run.stdout, run.stderr) == (0, "", "")


def test_check_prints_one_line_per_breach_and_exits_5(cli, r):
    q = WorkQueue(r, "q")
    q.push([b"1", b"2", b"3"], now_ms=int(time.time() * 1000) - 600_000)  # ten minutes old
    q.fail([q.lease(1)[0].id], dead=True)
    run = cli("stats", "q", "--check", "--max-pending", "1", "--max-age", "300",
              "--max-dead", "0", "--max-abandoned", "5")
    assert run.exit_code == 5, run
    rows = run.json
    # (in the order of core/contract/counts.py)
    assert [(row["queue"], row["measure"], row["limit"]) for row in rows] == [
        ("q", "pending", 1), ("q", "dead", 0), ("q", "age", 300)]
    assert rows[0]["value"] == 2 and rows[1]["value"] == 1
    assert 600 <= rows[2]["value"] < 700
    assert len(run.stderr.splitlines()) == 1
    assert run.stderr.startswith("rq-cli: 3 thresholds breached: q pending 2 > 1; q dead ")


def test_check_thresholds_from_the_config_per_queue(cli, tmp_path):
    write_config(tmp_path, "[defaults]\nmax_pending = 10\n"
                           "[queues.emails]\nmax_pending = 1\nmax_dead = 0\n"
                           "[queues.sms]\n[queues.bulk]\nmax_pending = 100\n")
    for name in ("emails", "sms", "bulk"):
        cli("push", name, *["1"] * 11)
    run = cli("stats", "--check")
    assert run.exit_code == 5
    assert [(row["queue"], row["value"], row["limit"]) for row in run.json] == [
        ("emails", 11, 1), ("sms", 11, 10)]
    # a flag overrides every queue's setting
    run = cli("stats", "--check", "--max-pending", "50")
    assert (run.exit_code, run.stdout) == (0, "")


def test_check_config_thresholds_are_validated(cli, tmp_path):
    write_config(tmp_path, "[queues.emails]\nmax_pending = -1\n")
    run = cli("stats", "--check")
    assert run.exit_code == 78 and "max_pending" in run.stderr and "line 2" in run.stderr
    write_config(tmp_path, "[queues.emails]\nmax_pendng = 1\n")
    run = cli("stats", "--check")
    assert run.exit_code == 78 and "did you mean 'max_pending'" in run.stderr


def test_check_without_thresholds_is_a_usage_error(cli):
    run = cli("stats", "q", "--check")
    assert run.exit_code == 2 and "no thresholds" in run.stderr


def test_thresholds_without_check_are_a_usage_error(cli):
    run = cli("stats", "q", "--max-pending", "3")
    assert run.exit_code == 2 and "--check" in run.stderr


def test_check_of_an_unreachable_server_is_6_not_5(cli, make_server):
    gone = make_server()
    url = gone.url
    gone.stop()
    run = cli("stats", "q", "--check", "--max-pending", "1", url=url)
    assert run.exit_code == 6, run
    row = run.one
    assert row["queue"] == "q" and row["error"].startswith(f"cannot connect to {url}")
    assert run.stderr.startswith("rq-cli: 1 of 1 could not be checked (the state is unknown): "
                                 f"cannot connect to {url}")
    assert len(run.stderr.splitlines()) == 1
    # discovery mode: the queues cannot even be listed; still 6, and a row naming the server
    run = cli("stats", "--check", "--max-dead", "0", url=url)
    assert run.exit_code == 6, run
    assert (run.one["queue"], run.one["url"]) == (None, url)


def test_check_of_a_breach_and_an_outage_is_6_and_shows_both(cli, make_server, tmp_path, r):
    gone = make_server()
    down = gone.url
    gone.stop()
    write_config(tmp_path, f'[queues.emails]\nurl = "{down}"\n[queues.sms]\n'
                           f'url = "redis://127.0.0.1:{r.connection_pool.connection_kwargs["port"]}'
                           '/0"\n')
    WorkQueue(r, "sms").push([b"1", b"2"])
    run = cli("stats", "--check", "--max-pending", "1", url=None)
    assert run.exit_code == 6, run
    assert [(row["queue"], row.get("measure"), "error" in row) for row in run.json] == [
        ("sms", "pending", False), ("emails", None, True)]
    assert "; 1 threshold breached: sms pending 2 > 1" in run.stderr


def test_check_values_read_the_same_in_the_table_and_the_summary(cli, r):
    q = WorkQueue(r, "q")
    q.push([b"1"], now_ms=int(time.time() * 1000) - 1_003_142)
    run = cli("stats", "q", "--check", "--max-age", "100.5", tty=True)
    assert run.exit_code == 5, run
    summary = re.search(r"q age (\S+) > (\S+)$", run.stderr.strip())
    assert summary, run.stderr
    value, limit = summary.groups()
    assert float(value) > 1003  # (milliseconds, as JSON has them: not rounded to 1003.14)
    row = next(line for line in run.stdout.splitlines() if " age " in line)
    assert value in row.split() and limit in row.split(), (row, value, limit)
    piped = cli("stats", "q", "--check", "--max-age", "100.5")
    assert f"> {piped.one['limit']}" in piped.stderr


@pytest.mark.parametrize("args", [
    ("--iterations", "2"), ("--interval", "5"), ("--iterations", "1", "--check",
                                                 "--max-dead", "0"),
    ("--by-tenant", "--format", "prometheus"), ("--by-tenant", "--check", "--max-dead", "0"),
    ("--by-tenant", "--watch", "--iterations", "1"),
])
def test_flags_that_would_do_nothing_are_refused(cli, args):
    run = cli("stats", "q", *args)
    assert run.exit_code == 2, run
    assert run.stdout == "" and len(run.stderr.splitlines()) == 1
    assert run.stderr.startswith("rq-cli: --")


def test_check_table_on_a_terminal(cli):
    cli("push", "q", "1", "2")
    run = cli("stats", "q", "--check", "--max-pending", "1", tty=True)
    assert run.exit_code == 5
    assert "measure" in run.stdout and "pending" in run.stdout and "limit" in run.stdout


def test_thresholds_merge():
    base = Thresholds({"pending": 10, "dead": 0})
    assert base.merged(Thresholds({"pending": 3})) == Thresholds({"pending": 3, "dead": 0})
    assert Thresholds.from_config({"max_age": 60.0}) == Thresholds({"age": 60.0})
    assert Thresholds.from_config({"max_age": None}) == Thresholds()
    assert not Thresholds().any()


def test_config_show_includes_thresholds(cli, tmp_path):
    write_config(tmp_path, "[defaults]\nmax_age = 600\n[queues.emails]\nmax_dead = 0\n")
    shown = cli("config", "show").one
    assert shown["defaults"]["max_age"] == 600
    assert shown["queues"]["emails"]["max_dead"] == 0


def test_stats_format_json_and_table(cli):
    cli("push", "q", "1")
    assert cli("stats", "q", "--format", "json", tty=True).one["pending"] == 1
    run = cli("stats", "q", "--format", "table")
    assert "pending" in run.stdout and not run.stdout.startswith("{")


def test_every_counter_the_scripts_count_is_listed_once():
    from pathlib import Path

    import rq_cli.core.scripting.scripts

    lua = Path(rq_cli.core.scripting.scripts.LUA_DIR)
    counted = set()
    for path in lua.glob("*.lua"):
        counted |= {name.lower() for name in re.findall(r"count\(C_([A-Z_]+)",
                                                        path.read_text())}
    assert counted == set(COUNTER_FIELDS)


# -- a queue that has never existed is never green (issue 29) ------------------------------------
def test_check_of_a_queue_that_never_existed_is_6(cli, r):
    """A new, empty server (or a wrong URL, database or prefix) holds no key and no counter of
    the queue: --check cannot vouch for it, whatever the thresholds."""
    run = cli("stats", "jobs", "--check", "--max-pending", "0")
    assert run.exit_code == 6, run
    assert run.one["queue"] == "jobs" and "never been used" in run.one["error"]
    assert run.stderr.startswith("rq-cli: 1 of 1 could not be checked (the state is unknown): "
                                 "queue jobs has no keys and no counters")
    # once used, drained to nothing: its counters remain, and it is checked as usual
    q = WorkQueue(r, "jobs")
    q.push([b"1"])
    q.complete([q.lease(1)[0].id])
    run = cli("stats", "jobs", "--check", "--max-pending", "0")
    assert (run.exit_code, run.stdout, run.stderr) == (0, "", ""), run


def test_prometheus_says_when_a_queue_never_existed(cli, r):
    WorkQueue(r, "used").push([b"1"])
    run = cli("stats", "used", "jobs", "--format", "prometheus")
    assert run.exit_code == 0, run  # the file is replaced; the metric says what happened
    found = families(run.stdout)
    assert values(found["rq_cli_queue_exists"], queue="used") == [1]
    assert values(found["rq_cli_queue_exists"], queue="jobs") == [0]
    assert values(found["rq_cli_up"], queue="jobs") == [1]  # (it was read: the server is up)
    assert run.stderr.startswith("rq-cli: queue jobs has no keys and no counters")
    assert len(run.stderr.splitlines()) == 1


def test_prometheus_queue_exists_is_0_when_unreachable(cli, make_server):
    gone = make_server()
    url = gone.url
    gone.stop()
    found = families(cli("stats", "q", "--format", "prometheus", url=url).stdout)
    assert values(found["rq_cli_queue_exists"], queue="q") == [0]


def test_stats_warns_of_a_queue_that_never_existed(cli):
    run = cli("stats", "jobs")
    assert run.exit_code == 0 and run.one["pending"] == 0
    assert run.stderr.startswith("rq-cli: warning: queue jobs has no keys and no counters")
