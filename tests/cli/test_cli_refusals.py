"""Refused input: one stderr line, a documented exit code, never exit 1, nothing stored.

The sweep runs many bad inputs across commands against a seeded database and checks, for
each: the exit code is the documented one (never 1, which is left for bugs), stderr is
exactly one line starting with ``rq-cli: ``, stdout is empty, and every key of the server
is byte-identical afterwards (DUMP before and after).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import redis
from cli_helpers import write_config

pytest_plugins = ["cli_helpers"]

USAGE, DATA, CONFIG = 2, 65, 78


def snapshot(r: redis.Redis) -> dict[bytes, bytes]:
    return {key: r.dump(key) for key in r.scan_iter(count=1000)}


@pytest.fixture
def seeded(cli, r: redis.Redis) -> dict[bytes, bytes]:
    """A queue with pending, leased, delayed and dead items; the snapshot of the database."""
    assert cli("push", "q", "--id", "a", '{"n": 1}').exit_code == 0
    assert cli("push", "q", "--id", "b", '{"n": 2}').exit_code == 0
    assert cli("push", "q", "--id", "c", '"text"').exit_code == 0
    assert cli("push", "q", "--id", "d", "--delay", "600", "{}").exit_code == 0
    assert cli("lease", "q").exit_code == 0
    assert cli("fail", "q", "b", "--dead", "--error", "x").exit_code in (0, 3)
    return snapshot(r)


# (arguments, expected exit code, a word the message must hold)
SWEEP: list[tuple[tuple[str, ...], int, str]] = [
    # arguments that are not UTF-8 (the shell passes bytes; Python keeps them as surrogates)
    (("push", "q\udcff", "{}"), DATA, "not valid UTF-8"),
    (("push", "q", "--id", "i\udcff", "{}"), DATA, "not valid UTF-8"),
    (("stats", "q\udcff"), DATA, "not valid UTF-8"),
    (("complete", "q", "i\udcff"), DATA, "not valid UTF-8"),
    (("peek", "q\udcff"), DATA, "not valid UTF-8"),
    (("fail", "q", "a", "--error", "e\udcff"), DATA, "not valid UTF-8"),
    (("requeue-dead", "q", "b", "--to", "t\udcff"), DATA, "not valid UTF-8"),
    # usage errors: Click's four-line box becomes one line
    (("lease", "q", "--count", "0"), USAGE, "--count"),
    (("lease", "q", "--lease", "-1"), USAGE, "--lease"),
    (("lease", "q", "--lease", "abc"), USAGE, "--lease"),
    (("push", "q", "--delay", "nan", "{}"), USAGE, "--delay"),
    (("push", "q", "--delay", "-5", "{}"), USAGE, "--delay"),
    (("push", "q", "--expire", "inf", "{}"), USAGE, "expir"),
    (("fail", "q", "a", "--retry-in", "nan"), USAGE, "--retry-in"),
    (("extend", "q", "a", "--lease", "0"), USAGE, "--lease"),
    (("peek", "q", "--state", "gone"), USAGE, "--state"),
    (("peek", "q", "-n", "-1"), USAGE, "--count"),
    (("stats", "--bogus"), USAGE, "--bogus"),
    (("lease",), USAGE, "QUEUE"),
    (("frobnicate",), USAGE, "frobnicate"),
    (("purge", "q", "--state", "sideways"), USAGE, "--state"),
    (("config", "nope"), USAGE, "nope"),
    # bad input
    (("push", "q", "not json"), DATA, "JSON"),
    (("push", "q", "--id", "", "{}"), USAGE, "id"),
    # refusals of rq-cli itself
    (("purge", "q"), USAGE, "--yes"),
    (("push", "q", "--id", "x", "{}", "{}"), USAGE, "--id"),
]


@pytest.mark.parametrize("args, code, word", SWEEP, ids=[" ".join(a) for a, _, _ in SWEEP])
def test_refusal_is_one_line_a_documented_code_and_stores_nothing(
        cli, r: redis.Redis, seeded: dict[bytes, bytes], args: tuple[str, ...], code: int,
        word: str) -> None:
    run = cli(*args)
    assert run.exit_code == code, run
    assert run.exit_code != 1
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("rq-cli: "), run
    assert word in lines[0], run
    assert run.stdout == ""
    assert snapshot(r) == seeded


@pytest.mark.parametrize("url, word", [
    ("{base}?foo=bar", "unknown option 'foo'"),
    ("{base_nodb}/abc", "database number"),
    ("{base}?db=abc", "cannot use server URL"),
    ("embedded:/proc/nope", "cannot create the directory"),
    ("embedded:{file}", "is not a directory"),
    ("nosuch://host", "must start with"),
])
def test_bad_urls_are_usage_errors(cli, r: redis.Redis, seeded: dict[bytes, bytes],
                                   server_url: str, tmp_path: Path, url: str,
                                   word: str) -> None:
    existing = tmp_path / "a-file"
    existing.write_text("x")
    url = url.format(base=server_url, base_nodb=server_url.rsplit("/", 1)[0], file=existing)
    for args in (("push", "q", "{}"), ("stats", "q"), ("lease", "q")):
        run = cli("--url", url, *args, url=None)
        assert run.exit_code == USAGE, run
        lines = run.stderr.splitlines()
        assert len(lines) == 1 and word in lines[0], run
    assert existing.read_text() == "x"
    assert snapshot(r) == seeded


def test_bad_url_in_the_config_file_is_a_config_error_naming_file_and_line(
        cli, r: redis.Redis, seeded: dict[bytes, bytes], tmp_path: Path) -> None:
    path = write_config(tmp_path, '[defaults]\nmax_attempts = 3\n\n[queues.jobs]\n'
                                  'prefix = "q"\nurl = "redis://127.0.0.1:1/abc"\n')
    run = cli("push", "jobs", "{}", url=None)
    assert run.exit_code == CONFIG, run
    line = run.stderr.strip()
    assert run.stderr.count("\n") == 1
    assert line.startswith(f"rq-cli: {path} line 6: url in [queues.jobs]: "), line
    assert "database number" in line
    path.write_text('url = "redis://127.0.0.1:1/0?nope=1"\n')
    run = cli("stats", "jobs", url=None)
    assert run.exit_code == CONFIG, run
    assert run.stderr.startswith(f"rq-cli: {path} line 1: url in the top level: "), run
    assert snapshot(r) == seeded


def test_config_that_is_a_directory_says_so(cli, tmp_path: Path) -> None:
    run = cli("--config", str(tmp_path), "stats", "q")
    assert run.exit_code == CONFIG
    assert run.stderr.count("\n") == 1 and "is a directory" in run.stderr, run


def test_usage_line_names_the_help_of_the_command(cli) -> None:
    run = cli("lease", "q", "--count", "0")
    assert run.stderr.startswith("rq-cli: Invalid value for '--count' / '-n': ")
    assert run.stderr.endswith("; see 'rq-cli lease --help'\n") and run.stderr.count("\n") == 1


def test_no_arguments_still_shows_the_help(cli) -> None:
    run = cli(url=None)
    assert run.exit_code == USAGE
    assert "Usage: rq-cli" in run.stdout + run.stderr and "Commands" in run.stdout + run.stderr


def test_non_utf8_argument_from_a_real_shell(server_url: str, r: redis.Redis) -> None:
    """The bytes a shell passes for ``$'q\\xff'``, through the real interpreter."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RQ_CLI_", "REDIS_URL"))}
    proc = subprocess.run([os.fsencode(sys.executable), b"-m", b"rq_cli", b"--no-config",
                           b"--url", server_url.encode(), b"push", b"q\xff", b"{}"],
                          capture_output=True, env=env, timeout=60)
    assert proc.returncode == DATA, proc
    assert proc.stderr.count(b"\n") == 1 and b"q\\xff" in proc.stderr, proc
    assert snapshot(r) == {}


def test_push_raw_data_arguments_may_be_any_bytes(cli, r: redis.Redis) -> None:
    """Only DATA of ``push --raw`` may be bytes that are not UTF-8: stored as given."""
    run = cli("push", "q", "--raw", "--id", "x", "a\udcffb")
    assert run.exit_code == 0, run
    assert r.get("q:item:x") == b"a\xffb"
