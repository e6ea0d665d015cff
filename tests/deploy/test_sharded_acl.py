"""The ACL rule of a sharded queue (issue 37 item 5; the manual's "Sharded queues", "ACL"):
a user with the queue's rule plus its shards' pattern (core.sharding.shardmeta.acl_patterns) runs a
sharded queue's commands; doctor's ACL check probes a shard's key too, so a user limited to
``P:*`` fails it with a fix naming both patterns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import run_cli, write_config
from test_acl import SECRET, _setuser, documented_rule

from rq_cli.core.sharding.shardmeta import acl_patterns
from rq_cli.errors import ExitCode

pytest_plugins = ["cli_helpers"]

PREFIX = "myapp:{emails}"
#: what the manual's "Sharded queues" page adds to the rule: the record's transaction
SHARDED_EXTRA = ["+watch", "+unwatch", "+discard"]


def _rule(keys: list[str], *extra: str) -> list[str]:
    rule = documented_rule()
    return [w for w in rule if not w.startswith("~")] + ["~" + k for k in keys] + \
        SHARDED_EXTRA + list(extra)


def test_a_sharded_queue_works_with_the_sharded_rule(make_server: Any, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    srv = make_server(requirepass="admin-pw-77")
    url = _setuser(srv, "emails-worker", _rule(acl_patterns(PREFIX), "+acl|dryrun",
                                               "+acl|whoami"))
    write_config(tmp_path, f'[queues.emails]\nprefix = "{PREFIX}"\nurl = "{url}"\n'
                           'shards = 2\n')

    def cli(*args: str, input: str | None = None) -> Any:
        run = run_cli(args, url=None, home=tmp_path, input=input)
        assert run.exit_code == 0, (args, run)
        return run

    cli("push", "emails", "-", input="1\n2\n3\n")  # creates the record: WATCH/MULTI
    cli("reshard", "emails", "3")
    cli("push", "emails", "--id", "a", "{}")
    leased = cli("lease", "emails", "--count", "4").json
    assert len(leased) == 4
    cli("complete", "emails", "-", input="".join(json.dumps(r) + "\n" for r in leased))
    cli("clean", "emails")
    doctor = run_cli(["doctor", "emails"], url=None, home=tmp_path)
    (acl,) = [r for r in doctor.json if r["check"] == "acl"]
    if _has_dryrun(srv):
        assert acl["status"] == "warn" and "+fcall" in acl["fix"], acl  # (the faster calls)
    else:  # (Redis 6.2: no ACL DRYRUN, so the doctor says it could not ask)
        assert acl["status"] == "warn" and "ACL DRYRUN" in acl["detail"], acl
    assert SECRET not in doctor.stdout + doctor.stderr


def test_doctor_names_the_shards_pattern_a_user_lacks(make_server: Any, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    srv = make_server(requirepass="admin-pw-77")
    admin = srv.client(protocol=2)
    url = _setuser(srv, "emails-worker", _rule([f"{PREFIX}:*"], "+acl|dryrun", "+acl|whoami"))
    write_config(tmp_path, f'[queues.emails]\nprefix = "{PREFIX}"\nurl = "{url}"\n'
                           'shards = 2\n')
    run = run_cli(["push", "emails", "{}"], url=None, home=tmp_path)
    assert run.exit_code == ExitCode.UNAVAILABLE, run  # the shards' keys are not the user's
    assert admin.llen(f"{PREFIX}:queue") == 0
    doctor = run_cli(["doctor", "emails"], url=None, home=tmp_path)
    (acl,) = [r for r in doctor.json if r["check"] == "acl"]
    if _has_dryrun(srv):
        assert acl["status"] == "fail", acl
        assert "~myapp:{emails}:* ~myapp:{emails~*" in acl["fix"], acl
    else:  # (Redis 6.2: no ACL DRYRUN, so the doctor says it could not ask)
        assert acl["status"] == "warn" and "ACL DRYRUN" in acl["detail"], acl
    admin.close()


def _has_dryrun(srv: Any) -> bool:
    """ACL DRYRUN came with Redis 7 (Valkey has it): the doctor's probe needs it."""
    admin = srv.client(protocol=2)
    try:
        return int(admin.info("server")["redis_version"].split(".")[0]) >= 7
    finally:
        admin.close()
