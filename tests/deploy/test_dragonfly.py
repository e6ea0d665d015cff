"""Dragonfly: every script rq-cli sends starts with ``--!df flags=allow-undeclared-keys``.

Dragonfly refuses a script that touches keys it was not handed in KEYS unless the script
declares that flag on its first line; rq-cli's scripts derive every key from the prefix. No
Dragonfly binary is installable here, so this checks what is *sent*, on the wire (MONITOR),
and that Redis/Valkey run the scripts with the line in front (it is a comment to them).
"""

from __future__ import annotations

import os
import uuid

import pytest
import redis

from rq_cli.core.contract.keys import DRAGONFLY_FLAGS
from rq_cli.core.contract.specs import SCRIPTS
from rq_cli.core.scripting.scripts import LUA_DIR, source

pytest_plugins = ["cli_helpers"]



def test_every_lua_file_is_a_registered_script() -> None:
    files = {f[:-4] for f in os.listdir(LUA_DIR) if f.endswith(".lua") and f[0] != "_"}
    assert files == set(SCRIPTS)


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_script_source_starts_with_the_flags_line(name: str) -> None:
    assert source(name).split("\n", 1)[0] == DRAGONFLY_FLAGS == (
        "--!df flags=allow-undeclared-keys")


def test_every_script_sent_on_the_wire_starts_with_the_flags_line(cli, r: redis.Redis) -> None:
    """With the script cache flushed, each script reaches the server in full (SCRIPT LOAD or
    EVAL) while the commands run; MONITOR shows the first line of each."""
    r.script_flush()
    marker = f"rq-cli-dragonfly-{uuid.uuid4().hex}"
    sent: list[str] = []
    with r.monitor() as mon:
        assert cli("push", "q", "1", "--id", "one").exit_code == 0
        assert cli("push", "q", "-", input="2\n3\n").exit_code == 0  # bulk: pipelined LOAD
        assert cli("lease", "q", "--count", "2").exit_code == 0
        for args in (("stats", "q"), ("peek", "q"), ("clean", "q"), ("queues",)):
            run = cli(*args)
            assert run.exit_code == 0, run
        r.echo(marker)
        while True:
            command = mon.next_command()["command"]
            if marker in command:
                break
            if command.upper().startswith(("SCRIPT LOAD", "EVAL ")):
                sent.append(command)
    assert len(sent) >= 4, sent
    for command in sent:
        body = command.split(" ", 2)[2]
        assert body.startswith(DRAGONFLY_FLAGS + "\\n"), body[:80]
