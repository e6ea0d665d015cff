"""``rq-cli errors`` (error groups) and ``requeue-dead``/``purge --error-group KEY``: the
groups' lines, filters, a table on a terminal, and the failure paths (a malformed key: exit 2
with no server touched; a key no item has: exit 3 with nothing changed)."""

from __future__ import annotations

import json

import pytest

from rq_cli.core.contract.errnorm import group_key

pytest_plugins = ["cli_helpers"]

REFUSED = "connection refused: 10.0.{}.1:6379"
BILLING = "HTTP 502 from billing after {}s"


def fill(cli, r) -> None:  # type: ignore[no-untyped-def]
    """d0..d5 dead (d0-d3 refused, d4-d5 billing), r0-r1 retrying (billing)."""
    for k in range(6):
        assert cli("push", "q", "--id", f"d{k}", json.dumps({"k": k})).exit_code == 0
    for k in range(2):
        assert cli("push", "q", "--id", f"r{k}", json.dumps({"k": 10 + k})).exit_code == 0
    assert cli("lease", "q", "--count", "8").exit_code == 0
    for k in range(6):
        text = REFUSED.format(k) if k < 4 else BILLING.format(k)
        assert cli("fail", "q", f"d{k}", "--dead", "--error", text).exit_code == 0
    for k in range(2):
        assert cli("fail", "q", f"r{k}", "--error", BILLING.format(k),
                   "--retry-in", "600").exit_code == 0


def test_errors_lines(cli, r) -> None:  # type: ignore[no-untyped-def]
    fill(cli, r)
    run = cli("errors", "q")
    assert run.exit_code == 0, run.stderr
    rows = run.json
    assert [(row["state"], row["count"], row["pattern"]) for row in rows] == [
        ("dead", 4, "connection refused: <addr>"),
        ("dead", 2, "HTTP 502 from billing after <duration>"),
        ("retrying", 2, "HTTP 502 from billing after <duration>")]
    refused = rows[0]
    assert refused["key"] == group_key(REFUSED.format(9))
    assert refused["sample_id"] == "d3" and refused["error"] == REFUSED.format(3)
    assert refused["first_at"] <= refused["last_at"]
    assert rows[1]["key"] == rows[2]["key"]  # one cause, one key, in both states
    assert [row["count"] for row in cli("errors", "q", "--state", "retrying").json] == [2]
    assert [row["count"] for row in cli("errors", "q", "--match", "k >= `3`").json] == [2, 2, 1]
    assert [row["count"] for row in cli("errors", "q", "--error", "refused").json] == [4]
    assert [row["state"] for row in cli("errors", "q", "--reason", "failed").json] == \
        ["dead", "dead"]


def test_errors_table_and_nothing_found(cli, r) -> None:  # type: ignore[no-untyped-def]
    empty = cli("errors", "q", tty=True)
    assert empty.exit_code == 0 and "no dead or retrying items with errors in q" in empty.stderr
    assert cli("errors", "q").stdout == ""
    fill(cli, r)
    table = cli("errors", "q", tty=True, width=120)
    assert table.exit_code == 0
    assert "connection refused" in table.stdout and "retrying" in table.stdout


@pytest.mark.parametrize(("args", "says"), [
    (["--state", "retrying", "--reason", "failed"], "--reason filters dead items"),
    (["--state", "nope"], "'nope' is not one of"),
    (["--match", "k ==="], "--match 'k ===' is not a JMESPath expression"),
])
def test_errors_refusals(cli, args, says) -> None:  # type: ignore[no-untyped-def]
    """A bad option is exit 2 with one line that names it, before any server is asked
    (the URL's port 1 has none)."""
    run = cli("errors", "q", *args, url="redis://127.0.0.1:1")
    assert run.exit_code == 2, run.stderr
    assert run.stderr.startswith("rq-cli: ") and run.stderr.count("\n") == 1, run.stderr
    assert says in run.stderr


def test_requeue_dead_error_group(cli, r) -> None:  # type: ignore[no-untyped-def]
    fill(cli, r)
    key = cli("errors", "q", "--state", "dead").json[0]["key"]
    shown = cli("peek", "q", "--state", "dead", "--error-group", key).json
    assert [row["id"] for row in shown] == ["d0", "d1", "d2", "d3"]
    dry = cli("requeue-dead", "q", "--error-group", key, "--dry-run").one
    assert (dry["matched"], dry["requeued"]) == (4, 0) and r.zcard("q:dead") == 6
    run = cli("requeue-dead", "q", "--error-group", key)
    assert run.exit_code == 0, run.stderr
    assert sorted(row["id"] for row in run.json) == ["d0", "d1", "d2", "d3"]
    assert "4 requeued of 4 matched" in run.stderr
    assert sorted(r.zrange("q:dead", 0, -1)) == [b"d4", b"d5"]
    # the group is gone: asking again is exit 3, with a line that says so
    again = cli("requeue-dead", "q", "--error-group", key)
    assert again.exit_code == 3
    assert f"matches error group {key}" in again.stderr and "rq-cli errors q" in again.stderr
    assert sorted(r.zrange("q:dead", 0, -1)) == [b"d4", b"d5"]


def test_purge_error_group(cli, r) -> None:  # type: ignore[no-untyped-def]
    fill(cli, r)
    key = group_key(BILLING.format(1))
    # without a terminal: --yes is needed, as for every purge
    assert cli("purge", "q", "--state", "dead", "--error-group", key).exit_code == 2
    # on a terminal: asked with the count; "n" deletes nothing
    asked = cli("purge", "q", "--state", "dead", "--error-group", key, tty=True,
                input="n\n")
    assert asked.exit_code == 3
    assert f"Delete the 2 matching dead items of error group {key} of queue q?" in asked.stderr
    assert r.zcard("q:dead") == 6
    row = cli("purge", "q", "--state", "dead", "--error-group", key, "--yes", "--summary").one
    assert (row["matched"], row["purged"]) == (2, 2)
    assert sorted(r.zrange("q:dead", 0, -1)) == [b"d0", b"d1", b"d2", b"d3"]
    # the retrying items of the same cause: pending/delayed, by the same key
    delayed = cli("purge", "q", "--state", "delayed", "--error-group", key, "--yes",
                  "--summary").one
    assert delayed["purged"] == 2 and r.zcard("q:delayed") == 0


def test_error_group_failure_paths(cli, r) -> None:  # type: ignore[no-untyped-def]
    fill(cli, r)
    # a malformed key: exit 2 before any server is reached
    for command in (["requeue-dead", "q"], ["purge", "q", "--state", "dead", "--yes"]):
        bad = cli(*command, "--error-group", "not-a-key", url="redis://127.0.0.1:1")
        assert bad.exit_code == 2 and "--error-group 'not-a-key' is not an error group key" \
            in bad.stderr
    # a well-formed key that no item has: exit 3, one line, nothing touched
    unknown = "0123456789ab"
    for command in (["requeue-dead", "q"], ["purge", "q", "--state", "dead", "--yes"],
                    ["purge", "q", "--state", "dead", "--dry-run"]):
        run = cli(*command, "--error-group", unknown)
        assert run.exit_code == 3, run.stderr
        assert f"no dead item of q matches error group {unknown}" in run.stderr
    asked = cli("purge", "q", "--state", "dead", "--error-group", unknown, tty=True,
                input="y\n")
    assert asked.exit_code == 3 and "Delete" not in asked.stderr
    assert r.zcard("q:dead") == 6 and r.zcard("q:delayed") == 2


def test_errors_json_gives_one_group_for_one_cause_with_varied_ids(cli, r) -> None:  # type: ignore[no-untyped-def]
    ids = ["00024bbd", "00019223", "7f3a9c01", "00000042", "a1b2c3d4", "31415926",
           "0badf00d", "27182818", "c0ffee00", "16180339", "deadbe3f", "00ab12cd",
           "99999999", "5e5e5e5e", "10000000", "abc12345", "44444444", "0f0f0f0f",
           "12121212", "fedcba98"]
    for k in range(len(ids)):
        assert cli("push", "q", "--id", f"d{k}", "{}").exit_code == 0
    assert cli("lease", "q", "--count", "20").exit_code == 0
    for k, i in enumerate(ids):
        assert cli("fail", "q", f"d{k}", "--dead", "--error", f"request {i}").exit_code == 0
    run = cli("errors", "q", "--json")
    assert run.exit_code == 0 and len(run.json) == 1, run.json
    assert run.json[0]["count"] == 20 and run.json[0]["pattern"] == "request <hex>"
