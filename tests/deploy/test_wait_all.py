"""``wait_replicas = "all"`` (issue 43): every replica the deployment has confirms each write,
the setting that survives any single partition; and a durable client that asks the
sentinels again about once a second while it writes.

- "all" from the config file, ``$RQ_CLI_WAIT_REPLICAS`` and ``--wait-replicas``; anything
  else is refused with one line (exit 78 in the file, 2 as a flag).
- Resolved from the sentinels (down replicas counted: a replica cut off is exactly what must
  not be counted out), else from the primary when the queue first writes; a write that does
  not reach them all in time is exit 8.
- ``doctor`` says which faults the setting survives, and warns on ``wait_fsync`` alone.
- A client whose writes are all confirmed still follows the sentinels to a new primary.

The partition itself (network namespaces, root, about 50 s) is ``python -m bench.partition``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from cli_helpers import run_cli
from servers import ServerProcess
from test_durability import SERVICE, SentinelSet, wait_for
from test_durability import sentinel_set as sentinel_set  # (a fixture)

from rq_cli.connection.connect import connect
from rq_cli.core.operations.durable import replica_count
from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem, QueueOptions
from rq_cli.errors import ConfigError, ExitCode, Unconfirmed
from rq_cli.settings.config import parse_text

ALL = QueueOptions(wait_replicas="all", wait_timeout=0.5)


def _connected(server: ServerProcess) -> int:
    return int(server.client().info("replication")["connected_slaves"])


def _warm(primary: ServerProcess, replicas: int) -> None:
    """The scripts loaded, and ``replicas`` replicas answering the primary's asks at once:
    just after their sync Valkey 9.1's replicas left a first WAIT unanswered for 0.5-1 s,
    longer than the short wait_timeout of the tests (a write with WAIT every 50 ms until
    one is confirmed within 0.2 s; 20 s at most, for a loaded machine)."""
    client = primary.client()
    WorkQueue(client, "warm").push([b"1"])

    def prompt() -> bool:
        pipe = client.pipeline(transaction=False)
        pipe.set("warm:probe", "1")
        pipe.execute_command("WAIT", replicas, 200)
        return bool(pipe.execute()[1] == replicas)
    wait_for(prompt, 20, f"{replicas} replicas to answer WAIT at once")
    client.delete("warm:probe")


@pytest.fixture
def trio(make_server) -> Iterator[tuple[ServerProcess, ServerProcess, ServerProcess]]:
    """A primary and two replicas (no Sentinel), in sync."""
    primary = make_server(repl_diskless_sync_delay=0)
    replicas = [make_server(extra_args=("--replicaof", "127.0.0.1", str(primary.port)))
                for _ in range(2)]
    wait_for(lambda: _connected(primary) == 2, 20, "both replicas to connect")
    _warm(primary, 2)  # (and each replica's first ACK can take a moment on a loaded machine)
    yield primary, replicas[0], replicas[1]


def _doctor(url: str, tmp_path: Path, env: dict[str, str]) -> dict[str, str]:
    run = run_cli(["doctor", "q", "--json"], url=url, home=tmp_path, env=env)
    (row,) = [row for row in run.json if row["check"] == "durability"]
    return row


# -- the setting -----------------------------------------------------------------------------

def test_all_in_the_config_file_and_bad_values_refused() -> None:
    config = parse_text('[defaults]\nwait_replicas = "all"\n[queues.q]\nwait_timeout = 2\n')
    options = config.resolve("q").options
    assert (options.wait_replicas, options.durable) == ("all", True)
    with pytest.raises(ConfigError, match='must be an integer or "all", not a string'):
        parse_text('[defaults]\nwait_replicas = "every"\n')
    with pytest.raises(ConfigError, match='at most 100, or "all"'):
        parse_text("[defaults]\nwait_replicas = 101\n")


def test_config_show_says_all_in_its_schema(tmp_path: Path) -> None:
    """``config show --json``: "all" as the file gives it, in the queue's options and the
    defaults, valid against config-show's schema."""
    from jsonschema import Draft202012Validator

    from rq_cli.output.shapes import SCHEMAS, schema

    config = tmp_path / "rq-cli.toml"
    config.write_text('[defaults]\nwait_replicas = "all"\n[queues.q]\nwait_timeout = 2\n')
    run = run_cli(["--config", str(config), "config", "show", "--json"], url=None,
                  home=tmp_path)
    (shown,) = run.json
    assert shown["defaults"]["wait_replicas"] == "all", shown
    assert shown["queues"]["q"]["wait_replicas"] == "all", shown
    check = Draft202012Validator(schema(SCHEMAS["config show"]))
    assert not list(check.iter_errors(shown))


@pytest.mark.parametrize("value", ["every", "1.5", "-1", ""])
def test_a_bad_wait_replicas_flag_is_one_line_and_exit_2(value: str, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "rq_cli", "--no-config", "--url",
                           "redis://127.0.0.1:1/0", "--wait-replicas", value, "push", "q",
                           "{}"], capture_output=True, text=True, timeout=60)
    assert done.returncode == ExitCode.USAGE, done.stderr
    assert done.stderr.count("\n") == 1 and "--wait-replicas" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_all_counts_the_primarys_replicas_at_the_first_write(trio, tmp_path: Path) -> None:
    """No Sentinel: "all" is the replicas connected when the queue first writes (2 here); a
    replica gone after that is a write not confirmed (exit 8), never a smaller count."""
    primary, first, second = trio
    q = WorkQueue(primary.client(), "q", ALL)
    q.push([NewItem(b"{}", "a")])
    assert replica_count(primary.client()) == (2, "primary")
    assert first.client().exists("q:item:a") and second.client().exists("q:item:a")
    row = _doctor(primary.url, tmp_path, {"RQ_CLI_WAIT_REPLICAS": "all"})
    assert row["status"] == "ok", row
    assert "wait_replicas = all (2, as the primary counts them)" in row["detail"]
    assert "survives a crash of the primary and a partition" in row["detail"]
    one = _doctor(primary.url, tmp_path, {"RQ_CLI_WAIT_REPLICAS": "1"})
    assert one["status"] == "ok", one
    assert "not a partition that leaves it with 1 of its 2 replicas" in one["detail"], one
    assert 'wait_replicas = "all"' in one["fix"]
    second.kill()
    wait_for(lambda: _connected(primary) == 1, 30, "the primary to see a replica gone")
    with pytest.raises(Unconfirmed) as caught:
        q.push([NewItem(b"{}", "b")])
    assert caught.value.ids == ["b"]
    assert "1 of 2 replicas confirmed it within 0.5 s (wait_replicas = all (2))" in \
        str(caught.value)
    assert primary.client().exists("q:item:b")  # made once, not confirmed, not retried


def test_all_behind_sentinel_is_what_the_sentinels_list(sentinel_set: SentinelSet,
                                                        tmp_path: Path) -> None:
    """``RQ_CLI_WAIT_REPLICAS=all`` and ``--wait-replicas all`` behind Sentinel: the replica
    count the sentinels list, a down replica included: with the replica killed the primary
    counts none, and a push there is exit 8 (the primary's own count would confirm it)."""
    url = sentinel_set.url
    env = {"RQ_CLI_WAIT_REPLICAS": "all", "RQ_CLI_WAIT_TIMEOUT": "2"}
    ok = run_cli(["push", "q", '{"n": 1}'], url=url, home=tmp_path, env=env)
    assert ok.exit_code == 0, ok.stderr
    assert sentinel_set.replica.client().llen("q:queue") == 1
    row = _doctor(url, tmp_path, env)
    assert row["status"] == "ok", row
    assert "wait_replicas = all (1, as the sentinels list them)" in row["detail"], row
    assert "survives a crash of the primary and a partition" in row["detail"]
    sentinel_set.replica.kill()
    wait_for(lambda: _connected(sentinel_set.primary) == 0, 30,
             "the primary to see its replica gone")
    done = subprocess.run(
        [sys.executable, "-m", "rq_cli", "--url", url, "--no-config", "--wait-replicas",
         "all", "--wait-timeout", "0.3", "push", "q", '{"n": 2}'],
        capture_output=True, text=True, timeout=60)
    assert done.returncode == ExitCode.UNCONFIRMED, done.stderr
    assert "0 of 1 replicas confirmed it within 0.3 s (wait_replicas = all (1))" in \
        done.stderr, done.stderr
    assert sentinel_set.primary.client().llen("q:queue") == 2  # made, not confirmed
    down = _doctor(url, tmp_path, env)
    assert down["status"] == "fail" and "all (1, as the sentinels list them)" in \
        down["detail"], down


def test_wait_fsync_alone_is_a_warning_not_ok(make_server, tmp_path: Path) -> None:
    """``wait_fsync = true`` with ``wait_replicas`` unset waits for the primary's own disk
    only: with a replica behind it, a failover still loses writes (a warn, exit 7)."""
    primary = make_server(appendonly="yes", appendfsync="always", repl_diskless_sync_delay=0)
    if not (primary.version.kind == "valkey" or primary.version.version_tuple >= (7, 2)):
        pytest.skip("this server has no WAITAOF")
    make_server(extra_args=("--replicaof", "127.0.0.1", str(primary.port)))
    wait_for(lambda: _connected(primary) == 1, 20, "the replica to connect")
    (tmp_path / "rq-cli.toml").write_text("[queues.q]\nwait_fsync = true\n")
    run = run_cli(["--config", str(tmp_path / "rq-cli.toml"), "doctor", "q", "--json"],
                  url=primary.url, home=tmp_path)
    (row,) = [row for row in run.json if row["check"] == "durability"]
    assert row["status"] == "warn", row
    assert "waits for this primary's own disk only" in row["detail"], row
    assert "a failover to one of its 1 replica(s) still loses" in row["detail"]
    assert 'wait_replicas = "all"' in row["fix"]


# -- asking the sentinels while writing ------------------------------------------------------

SENTINEL_USER = "sentinel-user"
PASSWORD = "pw"


def _sentinel_user(server: ServerProcess) -> None:
    server.client().execute_command("ACL", "SETUSER", SENTINEL_USER, "on", ">sentpw",
                                    "~*", "&*", "+@all")


@pytest.fixture
def cut_off(make_server, tmp_path: Path) -> Iterator[dict[str, ServerProcess]]:
    """The partition's shape without network namespaces: a primary ``old`` with two replicas,
    ``beside`` and ``other``, and three sentinels that reach them through an ACL user. The
    test deletes that user on ``old`` and ``beside``: the sentinels lose both (as across a
    partition) and promote ``other``, while a client still reaches ``old``, whose writes
    ``beside`` goes on confirming, and which the sentinels can never demote."""
    # (the default user has a password: a sentinel refused its own user is then refused
    # every command, as one cut off gets no reply)
    old = make_server(repl_diskless_sync_delay=0, requirepass=PASSWORD, masterauth=PASSWORD)
    replicas = {name: make_server(requirepass=PASSWORD, masterauth=PASSWORD,
                                  extra_args=("--replicaof", "127.0.0.1", str(old.port)))
                for name in ("beside", "other")}
    for server in (old, *replicas.values()):
        _sentinel_user(server)
    wait_for(lambda: _connected(old) == 2, 20, "both replicas to connect")
    _warm(old, 2)
    sentinels = []
    for n in range(3):
        conf = tmp_path / f"sentinel{n}.conf"
        conf.write_text(f"sentinel monitor {SERVICE} 127.0.0.1 {old.port} 2\n"
                        f"sentinel auth-user {SERVICE} {SENTINEL_USER}\n"
                        f"sentinel auth-pass {SERVICE} sentpw\n"
                        f"sentinel down-after-milliseconds {SERVICE} 1000\n"
                        f"sentinel failover-timeout {SERVICE} 10000\n")
        sentinels.append(make_server(config_file=conf, extra_args=("--sentinel",)))

    def listed(sentinel: ServerProcess) -> int:
        return len(sentinel.client(protocol=2).execute_command("SENTINEL", "REPLICAS",
                                                                 SERVICE))
    wait_for(lambda: all(listed(s) == 2 for s in sentinels), 30,
             "the sentinels to know both replicas")
    yield {"old": old, **replicas, "url": "redis+sentinel://" + ",".join(  # type: ignore[dict-item]
        f"127.0.0.1:{s.port}" for s in sentinels) + f"/{SERVICE}"}


def _promoted_with(server: ServerProcess, key: str) -> bool:
    """``server`` is a primary holding ``key``. A sentinel that promotes it closes its clients'
    connections (CLIENT KILL TYPE normal), this one's too: that is a no, asked again."""
    client = server.client()
    try:
        return client.info("replication")["role"] == "master" and bool(client.exists(key))
    except redis.ConnectionError:
        return False
    finally:
        client.close()


def _cut(group: dict[str, ServerProcess]) -> None:
    for name in ("old", "beside"):  # (ACL DELUSER also closes the sentinels' connections)
        group[name].client().execute_command("ACL", "DELUSER", SENTINEL_USER)


@pytest.mark.parametrize(("setting", "lands"), [(1, "other"), ("all", "nowhere")])
def test_a_durable_client_leaves_a_cut_off_primary_whose_writes_are_confirmed(
        cut_off: dict[str, ServerProcess], setting: int | str, lands: str) -> None:
    """The issue's loss: a client whose writes ``beside`` confirms never met an error that
    would make it ask the sentinels again, so it went on writing to ``old`` after they
    promoted ``other``. It now asks before a write once a second (ROLE_CHECK) has passed:
    with ``wait_replicas = 1`` its pushes move to ``other`` within seconds of the promotion;
    with "all" (2, as the sentinels list them) none on ``old`` was ever confirmed once
    ``other`` left it."""
    url = str(cut_off["url"])
    q = WorkQueue(connect(url, password=PASSWORD, timeout=5.0), "q",
                  QueueOptions(wait_replicas=setting, wait_timeout=0.5))
    q.push([NewItem(b"{}", "before")])
    _cut(cut_off)
    other = cut_off["other"]
    confirmed_on_old: list[str] = []
    deadline = time.monotonic() + 60  # (the sentinels' failover: seconds; a loaded machine)
    n = 0
    while time.monotonic() < deadline:
        n += 1
        try:
            q.push([NewItem(b"{}", f"p{n}")])
            if cut_off["old"].client().exists(f"q:item:p{n}"):
                confirmed_on_old.append(f"p{n}")
        except (Unconfirmed, redis.RedisError):
            pass
        if _promoted_with(other, f"q:item:p{n}"):
            break
        time.sleep(0.05)
    promoted = other.client().info("replication")["role"] == "master"
    assert promoted, "the sentinels did not promote the other replica"
    assert other.client().exists(f"q:item:p{n}"), "the client never left the old primary"
    landed_late = [i for i in confirmed_on_old if not other.client().exists(f"q:item:{i}")]
    if lands == "nowhere":
        assert landed_late == [], "all: a write confirmed on the cut-off side"
