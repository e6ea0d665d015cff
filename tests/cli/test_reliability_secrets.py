"""Reliability: a password never appears in output, errors or logs (docs/DESIGN.md section 4).

Every command runs with a password in the URL -- given by ``--url``, by ``$RQ_CLI_URL``, in a
config file, or through ``password_env`` -- against a good server (``requirepass`` and an ACL
user whose password needs percent-encoding), a bad address, and the good server with a wrong
password; with ``RQ_CLI_DEBUG=1`` (tracebacks) too. No stdout, stderr or server log line may
contain the password, raw or percent-encoded.

The CLI runs as ``python -m rq_cli`` in subprocesses (a few at a time, to keep it quick).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest
from servers import ServerProcess, free_port

from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem

MakeServer = Callable[..., ServerProcess]

PW_DEFAULT = "Sekr1t-default-7f3a9c"  # requirepass (the default user)
PW_APP = "p@ss:w/rd%Z!x#y?q=1&s"  # the ACL user "app": every character that needs escaping
PW_WRONG = "Wr0ng-guess-d41d8c"
ENCODED_APP = quote(PW_APP, safe="")


def secrets() -> list[str]:
    """Every form in which a password could leak (raw, percent-encoded, distinctive parts)."""
    return [PW_DEFAULT, PW_APP, PW_WRONG, ENCODED_APP, "Sekr1t", "Wr0ng", "w/rd%Z", "rd%25Z"]


# Every command, with arguments that reach the server. ITEM is a leased item's id.
COMMANDS: list[tuple[list[str], bytes]] = [
    (["push", "Q", '{"n": 1}'], b""),
    (["push", "Q", "-"], b'{"n": 2}\n{"n": 3}\n'),
    (["push", "Q", "--with-ids", "-"], b'{"id": "w1", "data": 1}\n'),
    (["lease", "Q", "--count", "2"], b""),
    (["lease", "Q", "--wait", "0.2"], b""),
    (["extend", "Q", "ITEM"], b""),
    (["fail", "Q", "ITEM", "--error", "boom"], b""),
    (["complete", "Q", "ITEM"], b""),
    (["complete", "Q", "no-such-item"], b""),
    (["stats", "Q"], b""),
    (["stats", "--discover"], b""),
    (["peek", "Q", "-s", "processing"], b""),
    (["peek", "Q", "-s", "dead"], b""),
    (["queues"], b""),
    (["clean", "Q"], b""),
    (["clean", "Q", "--deep", "--grace", "0"], b""),
    (["requeue-dead", "Q", "--all"], b""),
    (["purge", "Q", "--dry-run"], b""),
    (["purge", "Q", "--state", "all", "--yes"], b""),
    (["pause", "Q"], b""),
    (["resume", "Q"], b""),
    (["config", "show"], b""),
    (["config", "show", "--json"], b""),
    (["config", "path"], b""),
    (["server", "status", "no-such-embedded-dir"], b""),
]


# The commands run in every mode; the main modes (MAIN_MODES) run all of COMMANDS.
SOME_COMMANDS = [COMMANDS[i] for i in (1, 3, 7, 10, 21)]
MAIN_MODES = ("flag-acl-user", "flag-bad-address", "flag-wrong-password")


@dataclass
class Mode:
    """How the password reaches rq-cli: flags, environment, config file."""

    name: str
    flags: list[str]
    env: dict[str, str]
    reachable: bool  # the server answers and accepts the password


@dataclass
class Run:
    mode: str
    args: list[str]
    code: int
    stdout: bytes
    stderr: bytes


def run(mode: Mode, args: list[str], stdin: bytes, queue: str, item: str) -> Run:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RQ_CLI_", "REDIS_URL"))}
    env.update(mode.env)
    argv = [queue if a == "Q" else item if a == "ITEM" else a for a in args]
    proc = subprocess.run([sys.executable, "-m", "rq_cli", *mode.flags, *argv], input=stdin,
                          capture_output=True, timeout=60, env=env)
    return Run(mode.name, argv, proc.returncode, proc.stdout, proc.stderr)


def modes(srv: ServerProcess, tmp_path: Path) -> list[Mode]:
    good = f"127.0.0.1:{srv.port}/0"
    bad = f"127.0.0.1:{free_port()}/0"  # nothing listens there
    url_default = f"redis://:{PW_DEFAULT}@{good}"
    url_app = f"redis://app:{ENCODED_APP}@{good}"
    url_bad = f"redis://app:{ENCODED_APP}@{bad}"
    url_wrong = f"redis://:{PW_WRONG}@{good}"

    def config(name: str, text: str) -> str:
        path = tmp_path / f"{name}.toml"
        path.write_text(text)
        return str(path)

    cfg_env = config("env", f'url = "redis://app@{good}"\npassword_env = "RQ_TEST_PASSWORD"\n'
                            '[queues.jobs]\nprefix = "cfg-jobs"\n')
    cfg_env_bad = config("envbad", f'url = "redis://app@{bad}"\n'
                                   'password_env = "RQ_TEST_PASSWORD"\n')
    cfg_url = config("url", f'url = "{url_default}"\n'
                            f'[queues.jobs]\nprefix = "cfg-url"\nurl = "{url_app}"\n')
    cfg_url_bad = config("urlbad", f'url = "{url_bad}"\n[queues.jobs]\nprefix = "j"\n')
    no_cfg = ["--no-config"]
    return [
        Mode("flag-default-user", [*no_cfg, "--url", url_default], {}, True),
        Mode("flag-acl-user", [*no_cfg, "--url", url_app], {}, True),
        Mode("flag-bad-address", [*no_cfg, "--url", url_bad], {}, False),
        Mode("flag-wrong-password", [*no_cfg, "--url", url_wrong], {}, False),
        Mode("env-url", no_cfg, {"RQ_CLI_URL": url_app}, True),
        Mode("env-url-bad-address", no_cfg, {"RQ_CLI_URL": url_bad}, False),
        Mode("env-redis-url", no_cfg, {"REDIS_URL": url_default}, True),
        Mode("config-password-env", ["--config", cfg_env], {"RQ_TEST_PASSWORD": PW_APP}, True),
        Mode("config-password-env-bad-address", ["--config", cfg_env_bad],
             {"RQ_TEST_PASSWORD": PW_APP}, False),
        Mode("config-url", ["--config", cfg_url], {}, True),
        Mode("config-url-bad-address", ["--config", cfg_url_bad], {}, False),
        Mode("debug-bad-address", [*no_cfg, "--url", url_bad], {"RQ_CLI_DEBUG": "1"}, False),
        Mode("debug-wrong-password", [*no_cfg, "--url", url_wrong], {"RQ_CLI_DEBUG": "1"},
             False),
    ]


@pytest.mark.timeout(180)
def test_no_password_in_any_output_error_or_log(make_server: MakeServer,
                                                tmp_path: Path) -> None:
    srv = make_server(requirepass=PW_DEFAULT)
    admin = srv.client()
    admin.execute_command("ACL", "SETUSER", "app", "on", f">{PW_APP}", "~*", "&*", "+@all")
    all_modes = modes(srv, tmp_path)
    jobs = []
    for n, mode in enumerate(all_modes):
        queue = "jobs" if mode.name.startswith("config") else f"sec{n}"
        prefix = {"config-password-env": "cfg-jobs", "config-url": "cfg-url"}.get(mode.name, queue)
        wq = WorkQueue(admin, prefix)
        wq.push([NewItem(b'{"seed": 1}', "seeded"), NewItem(b'{"seed": 2}', "other")])
        item = wq.lease()[0].id
        wq.fail(["other"], dead=True)  # something for peek/requeue-dead to show
        for args, stdin in COMMANDS if mode.name in MAIN_MODES else SOME_COMMANDS:
            jobs.append((mode, args, stdin, queue, item))
    with ThreadPoolExecutor(max_workers=4) as pool:
        runs = list(pool.map(lambda job: run(*job), jobs))

    leaks = []
    for result in runs:
        for stream, data in (("stdout", result.stdout), ("stderr", result.stderr)):
            text = data.decode("utf-8", errors="replace")
            for secret in secrets():
                if secret in text:
                    line = next(x for x in text.splitlines() if secret in x)
                    leaks.append(f"{result.mode}: rq-cli {' '.join(result.args)}: {stream} "
                                 f"shows {secret!r}: {line[:200]}")
    assert not leaks, "\n".join(leaks[:10])

    # The runs did reach the server (or failed to, as they should), with sane exit codes.
    by_mode = {m.name: m for m in all_modes}
    offline = ("config", "server")  # commands that never connect
    for result in runs:
        mode = by_mode[result.mode]
        err = result.stderr.decode(errors="replace")
        if result.args[0] in offline:
            assert result.code in (0, 3), (result.mode, result.args, result.code, err)
        elif mode.reachable:
            assert result.code in (0, 3, 4), (result.mode, result.args, result.code, err)
        else:
            assert result.code == 69, (result.mode, result.args, result.code, err)
            if not result.mode.startswith("debug"):
                assert "Traceback" not in err
            last = err.splitlines()[-1]
            assert "***" in last or "authentication failed" in last or "cannot connect" in last
    reached = [r for r in runs if by_mode[r.mode].reachable and r.args[0] == "stats"]
    assert reached and all(r.code == 0 for r in reached)
    # The server's log shows no password either.
    log = srv.log_path.read_text(errors="replace")
    assert not [s for s in secrets() if s in log]
    admin.close()


@pytest.mark.parametrize("url", [
    f"redis//:{PW_DEFAULT}@127.0.0.1:6390/0",
    f"redis:/:{PW_DEFAULT}@127.0.0.1:6390/0",
    f"redis:{PW_DEFAULT}@127.0.0.1:6390/0",
])
def test_mistyped_url_does_not_leak_its_password(url: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RQ_CLI_", "REDIS_URL"))}
    proc = subprocess.run([sys.executable, "-m", "rq_cli", "--no-config", "--url", url,
                           "stats", "q"], capture_output=True, timeout=30, env=env)
    assert proc.returncode in (2, 69), proc.stderr
    assert PW_DEFAULT.encode() not in proc.stdout + proc.stderr, proc.stderr
