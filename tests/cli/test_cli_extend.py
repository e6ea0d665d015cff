"""rq-cli extend: new deadline, lease lost (exit 4), missing (exit 3)."""

from __future__ import annotations

import json
import time

pytest_plugins = ["cli_helpers"]  # the cli(...) fixture



def test_extend_pushes_the_deadline(cli):
    cli("push", "q", "--id", "a", "{}")
    leased = cli("lease", "q", "--lease", "10").one
    run = cli("extend", "q", "-", "--lease", "600", input=json.dumps(leased))
    assert run.exit_code == 0, run
    row = run.one
    assert row["outcome"] == "extended"
    assert row["lease_expires_at"] > time.time() + 500


def test_extend_default_lease_is_the_queue_setting(cli):
    cli("push", "q", "--id", "a", "{}")
    cli("lease", "q", "--lease", "5")
    row = cli("extend", "q", "a").one
    assert row["lease_expires_at"] > time.time() + 250


def test_extend_lost_lease_exits_4(cli):
    cli("push", "q", "--id", "a", "{}")
    cli("lease", "q", "--lease", "0.05")
    time.sleep(0.1)
    run = cli("extend", "q", "a")
    assert run.exit_code == 4
    assert run.one["outcome"] in ("lost", "conflict")
    assert "lease" in run.stderr


def test_extend_missing_exits_3(cli):
    run = cli("extend", "q", "nothing-here")
    assert run.exit_code == 3


def test_extend_zero_lease_is_a_usage_error(cli):
    cli("push", "q", "--id", "a", "{}")
    cli("lease", "q")
    assert cli("extend", "q", "a", "--lease", "0").exit_code == 2
