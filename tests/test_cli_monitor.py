"""rq-cli stats --format prometheus (parsed with prometheus-client) and stats --check."""

from __future__ import annotations

import re
import time

from cli_helpers import write_config
from prometheus_client.parser import text_string_to_metric_families

from rq_cli.core.keys import COUNTER_FIELDS
from rq_cli.metrics import Thresholds, metric_names
from rq_cli.queue import WorkQueue

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
    assert "q: cannot connect" in run.stderr and len(run.stderr.splitlines()) == 1


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
    assert [(row["queue"], row["measure"], row["limit"]) for row in rows] == [
        ("q", "pending", 1), ("q", "age", 300), ("q", "dead", 0)]
    assert rows[0]["value"] == 2 and rows[2]["value"] == 1
    assert 600 <= rows[1]["value"] < 700
    assert len(run.stderr.splitlines()) == 1
    assert run.stderr.startswith("rq-cli: 3 thresholds breached: q pending 2 > 1; q age ")


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


def test_check_of_an_unreachable_server_is_69_not_5(cli, make_server):
    gone = make_server()
    url = gone.url
    gone.stop()
    run = cli("stats", "q", "--check", "--max-pending", "1", url=url)
    assert run.exit_code == 69 and run.stdout == ""


def test_check_table_on_a_terminal(cli):
    cli("push", "q", "1", "2")
    run = cli("stats", "q", "--check", "--max-pending", "1", tty=True)
    assert run.exit_code == 5
    assert "measure" in run.stdout and "pending" in run.stdout and "limit" in run.stdout


def test_thresholds_merge():
    base = Thresholds(pending=10, dead=0)
    assert base.merged(Thresholds(pending=3)) == Thresholds(pending=3, dead=0)
    assert Thresholds.from_config({"max_age": 60.0}) == Thresholds(age=60.0)
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

    import rq_cli.core.scripts

    lua = Path(rq_cli.core.scripts.LUA_DIR)
    counted = set()
    for path in lua.glob("*.lua"):
        counted |= set(re.findall(r"count\('([a-z_]+)'", path.read_text()))
    assert counted == set(COUNTER_FIELDS)
