"""ACL: a user limited to one queue's keys and the commands the manual's rule lists runs every
rq-cli command; a user without EVALSHA gets one line naming it.

The rule is read from the manual (docs/deployments.md, between the ``acl-rule`` markers), so
the documented rule is the tested one.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import redis
from cli_helpers import Run, run_cli

from rq_cli.core.contract.specs import SCRIPTS
from rq_cli.core.scripting.scripts import source

pytest_plugins = ["cli_helpers"]

ACL_PAGE = Path(__file__).resolve().parents[2] / "docs" / "deployments.md"  # the manual's page
PREFIX = "myapp:{emails}"
SECRET = "worker-pw-51"


def documented_rule() -> list[str]:
    """The ACL SETUSER arguments after the user name, as the manual shows them."""
    block = re.search(r"<!-- acl-rule -->\s*```\s*\n(.*?)\n```", ACL_PAGE.read_text(), re.S)
    assert block, "docs/deployments.md has no acl-rule block"
    words = block.group(1).split()
    assert words[:3] == ["ACL", "SETUSER", "emails-worker"], words[:3]
    return [w.replace(">PASSWORD", f">{SECRET}") for w in words[3:]]


@pytest.fixture
def acl_server(make_server):
    srv = make_server(requirepass="admin-pw-77")
    return srv


def _setuser(srv, name: str, rule: list[str]) -> str:
    admin = srv.client(protocol=2)
    admin.execute_command("ACL", "SETUSER", name, "reset", *rule)
    admin.close()
    return f"redis://{name}:{SECRET}@127.0.0.1:{srv.port}/0"


def test_every_command_works_with_the_documented_rule(acl_server, tmp_path):
    url = _setuser(acl_server, "emails-worker", documented_rule())

    def cli(*args: str, input: str | None = None) -> Run:
        run = run_cli(["--prefix", *args], url=url, home=tmp_path, input=input)
        assert run.exit_code == 0, (args, run)
        assert "NOPERM" not in run.stderr and "permission" not in run.stderr
        return run

    cli("push", PREFIX, '{"n": 1}', "--id", "a")
    cli("push", PREFIX, "-", input="1\n2\n3\n4\n")
    cli("push", PREFIX, "{}", "--id", "later", "--delay", "100")
    leased = cli("lease", PREFIX, "--json", "--count", "4").stdout.splitlines()
    assert len(leased) == 4
    cli("complete", PREFIX, "-", input=leased[0] + "\n")
    cli("extend", PREFIX, "-", input=leased[1] + "\n")
    cli("fail", PREFIX, "-", input=leased[2] + "\n")
    cli("fail", PREFIX, "-", "--dead", input=leased[3] + "\n")
    assert cli("stats", PREFIX, "--json").one["dead"] == 1
    cli("peek", PREFIX, "--state", "delayed")
    cli("clean", PREFIX)
    cli("clean", PREFIX, "--deep")
    assert cli("requeue-dead", PREFIX, "--all", "--json").one["requeued"] == 1
    cli("pause", PREFIX)
    cli("resume", PREFIX)
    cli("cancel", PREFIX, "later")
    cli("work", PREFIX, "--max-items", "1", "--idle-exit", "0.2", "--", "true")
    found = run_cli(["queues", "--json"], url=url, home=tmp_path)
    assert found.exit_code == 0, found
    assert PREFIX in {row["prefix"] for row in found.json}
    # a bulk push: transactions (MULTI, SCRIPT LOAD, MSET, HSET, LPUSH, EVALSHA, EXEC)
    admin = acl_server.client(protocol=2)
    execs = admin.info("commandstats").get("cmdstat_exec", {}).get("calls", 0)
    before = admin.llen(f"{PREFIX}:queue")
    cli("push", PREFIX, "-", input="".join(f"{i}\n" for i in range(1500)))
    assert admin.info("commandstats")["cmdstat_exec"]["calls"] - execs == 3  # probe, 2 batches
    assert admin.llen(f"{PREFIX}:queue") == before + 1500
    admin.close()
    cli("purge", PREFIX, "--state", "all", "--yes")
    # an empty queue: lease waits on the server (BLMOVE), then finds nothing (exit 3)
    waited = run_cli(["--prefix", "lease", PREFIX, "--wait", "0.3"], url=url, home=tmp_path)
    assert waited.exit_code == 3, waited
    assert "permission" not in waited.stderr
    # a fair queue: a tenant push leaves a wake-up token, a waiter blocks on it (BLPOP)
    cli("push", PREFIX, "{}", "--tenant", "acme")
    cli("lease", PREFIX)
    waited = run_cli(["--prefix", "lease", PREFIX, "--wait", "0.3"], url=url, home=tmp_path)
    assert waited.exit_code == 3, waited
    assert "permission" not in waited.stderr


def test_every_command_a_script_calls_is_in_the_rule(r: redis.Redis):
    """Static check, for script paths the run above may not take: each quoted upper-case word
    of the scripts that the server knows as a command is allowed by the rule."""
    allowed = {w[1:].split("|")[0].upper() for w in documented_rule() if w.startswith("+")}
    words = set()
    for name in SCRIPTS:
        words |= set(re.findall(r"'([A-Z]{3,})'", source(name)))
    known = {str(name).upper() for name in r.command()}
    commands = words & known
    assert commands, words
    assert commands <= allowed, sorted(commands - allowed)


def test_without_multi_and_exec_a_bulk_push_goes_through_push_lua(acl_server, tmp_path):
    """The rule before rq-cli 0.2 had no +multi +exec: a bulk push still works, as push.lua
    calls, after one refused MULTI (and the doctor says what it costs)."""
    admin = acl_server.client(protocol=2)
    dryrun = int(admin.info("server")["redis_version"].split(".")[0]) >= 7
    rule = [w for w in documented_rule() if w not in ("+multi", "+exec")]
    # (on Redis >= 7 and Valkey, the user may ask ACL DRYRUN about itself: the doctor then
    # names every command it lacks)
    url = _setuser(acl_server, "older-rule",
                   rule + (["+acl|whoami", "+acl|dryrun"] if dryrun else []))
    run = run_cli(["--prefix", "push", PREFIX, "-"], url=url, home=tmp_path,
                  input="".join(f"{i}\n" for i in range(1500)))
    assert (run.exit_code, run.stderr) == (0, ""), run
    assert len(run.stdout.splitlines()) == 1500
    assert admin.llen(f"{PREFIX}:queue") == 1500 and admin.hlen(f"{PREFIX}:enqueued") == 0
    assert admin.info("commandstats").get("cmdstat_exec", {}).get("calls", 0) == 0
    admin.close()
    doctor = run_cli(["--prefix", "doctor", PREFIX, "--json"], url=url, home=tmp_path)
    [acl] = [row for row in doctor.json if row["check"] == "acl"]
    if dryrun:
        assert acl["status"] == "warn", acl
        assert "multi, exec" in acl["detail"] and "push.lua" in acl["detail"], acl
        assert "+multi +exec" in acl["fix"], acl


def test_a_user_without_evalsha_gets_one_line_naming_it(acl_server, tmp_path):
    rule = [w for w in documented_rule() if w != "+evalsha"]
    url = _setuser(acl_server, "no-scripts", rule)
    run = run_cli(["--prefix", "push", PREFIX, "{}"], url=url, home=tmp_path)
    assert run.exit_code == 69, run
    assert run.stderr.startswith(
        f"rq-cli: permission denied for redis://no-scripts:***@127.0.0.1:{acl_server.port}/0: "
        "the server's ACL does not allow this (")
    # the server's own words name the command: "... no permissions to run the 'evalsha'
    # command" (Redis 7: "this user has", Valkey: "User no-scripts has", 6.2: "... or its
    # subcommand")
    assert "no permissions to run the 'evalsha' command" in run.stderr
    assert len(run.stderr.splitlines()) == 1
    assert SECRET not in run.stderr


def test_a_key_outside_the_pattern_is_one_line(acl_server, tmp_path):
    url = _setuser(acl_server, "emails-worker", documented_rule())
    run = run_cli(["--prefix", "push", "myapp:{other}", "{}"], url=url, home=tmp_path)
    assert run.exit_code == 69, run
    assert run.stderr.startswith("rq-cli: permission denied for redis://emails-worker:***@")
    assert re.search(r"(?i)no permissions to access (a|one of the) key", run.stderr)
    assert len(run.stderr.splitlines()) == 1
