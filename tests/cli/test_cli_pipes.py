"""Pipes: what a shell pipeline sees at its ends.

- ``rq-cli lease empty | rq-cli complete empty -``: an empty stdin is nothing to do (exit 3,
  one quiet line), not a usage error; the same for ``fail`` and ``extend``.
- ``rq-cli push q - < big | head -2``: exit 141, one stderr line with exactly how many items
  were stored (the batches in flight are read, not printed).
- a push stopped by Ctrl-C or SIGTERM at any moment says exactly what it stored (its stdin a
  pipe held open, so that no machine is fast enough to finish first), also while it waits
  for input; a second signal ends it at once, saying what it stored; a Ctrl-C in any
  command's start-up is one line, exit 130, never a traceback.
- a bulk push stopped by a batch not confirmed (exit 8) names the input lines never sent.
- a push to a server that refuses the connection does not say a batch may have been stored.
- ``rq-cli config path`` prints the bare path, piped or not (documented).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
import redis
from cli_helpers import rq_cli_command, write_config
from waiting import wait_for

pytest_plugins = ["cli_helpers"]

NOTHING, USAGE, UNAVAILABLE, BROKEN_PIPE = 3, 2, 69, 141


@pytest.mark.parametrize("verb", ["complete", "fail", "extend"])
def test_empty_stdin_is_nothing_to_do(cli, verb: str) -> None:
    for args in ((verb, "q", "-"), (verb, "q")):  # '-', or stdin not a terminal
        run = cli(*args, input=b"")
        assert run.exit_code == NOTHING, run
        assert run.stdout == ""
        assert run.stderr == f"rq-cli: nothing to {verb}: no ids on stdin\n"


def test_no_ids_on_a_terminal_is_still_a_usage_error(cli) -> None:
    run = cli("complete", "q", stdin_tty=True)
    assert run.exit_code == USAGE and run.stderr.count("\n") == 1, run


def env_without_rq_cli() -> dict[str, str]:
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("RQ_CLI_", "REDIS_URL", "PYTHONUNBUFFERED"))}


def test_push_into_head_says_how_many_were_stored(server_url: str, r: redis.Redis) -> None:
    """``rq-cli push q - < lines | head -2``: two lines out, then exit 141 and ONE stderr line
    with how many items were stored (push changes the queue: the count must not be lost)."""
    lines = b"".join(b"%d\n" % n for n in range(200_000))
    with tempfile.TemporaryFile() as source, tempfile.TemporaryFile() as err:
        source.write(lines)
        source.seek(0)
        proc = subprocess.Popen([sys.executable, "-m", "rq_cli", "--no-config", "--url",
                                 server_url, "push", "q", "-"], stdin=source,
                                stdout=subprocess.PIPE, stderr=err, env=env_without_rq_cli())
        assert proc.stdout is not None
        head = [proc.stdout.readline(), proc.stdout.readline()]
        proc.stdout.close()
        code = proc.wait(timeout=120)
        err.seek(0)
        assert all(line.startswith(b'{"id":') for line in head)
        text = err.read()
        assert code == BROKEN_PIPE and text.count(b"\n") == 1, text
        found = re.search(rb"^rq-cli: push: stdout was closed; exactly (\d+) items? stored",
                          text)
        assert found, text
        assert 2 <= int(found.group(1)) == r.llen("q:queue")  # the batches in flight counted


def test_push_to_a_refusing_server_does_not_say_a_batch_may_be_stored(cli) -> None:
    run = cli("push", "q", "-", input=b"1\n2\n", url="redis://127.0.0.1:1/0")
    assert run.exit_code == UNAVAILABLE
    assert run.stderr.count("\n") == 1 and "may also have been stored" not in run.stderr, run


def test_config_path_is_a_bare_path_when_piped(cli, tmp_path: Path) -> None:
    path = write_config(tmp_path, "")
    run = cli("config", "path", url=None)
    assert (run.exit_code, run.stdout) == (0, f"{path}\n")


@pytest.mark.parametrize("after", [3_000, 40_000])
def test_ctrl_c_during_push_reports_exactly_what_was_stored(
        server_url: str, r: redis.Redis, tmp_path: Path, after: int) -> None:
    """Ctrl-C part-way through a 300k-line push: the batches in flight are read before the
    exit, so the count said (and printed) is the count stored; exit 130, one line."""
    source = tmp_path / "lines.jsonl"
    source.write_bytes(b"".join(b'{"n":%d}\n' % n for n in range(300_000)))
    with source.open("rb") as stdin:
        proc = subprocess.Popen([sys.executable, "-m", "rq_cli", "--no-config", "--url",
                                 server_url, "push", "q", "-"], stdin=stdin,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=env_without_rq_cli())
        assert proc.stdout is not None and proc.stderr is not None
        printed = 0
        for _ in proc.stdout:
            printed += 1
            if printed == after:
                proc.send_signal(signal.SIGINT)
        err = proc.stderr.read().decode()
        code = proc.wait(timeout=120)
    stored = r.llen("q:queue")
    assert code == 130, err
    assert err.count("\n") == 1, err
    said = re.search(r"exactly (\d+) items stored", err)
    assert said, err
    assert int(said.group(1)) == stored == printed
    assert "push only the rest of the input" in err


#: seconds: a bound for a hang (a push that never ends), never a measure of speed
HANG = 120


class FedPush:
    """``rq-cli push q -`` with its stdin a pipe this test feeds ``lines`` lines and then
    holds open until the push ends: the push cannot run out of input before a signal,
    however fast the machine. Its stdout is counted as it is printed (``read_stdout``),
    or only once it ended (then a push blocks once the pipe is full)."""

    def __init__(self, server_url: str, lines: bytes, *args: str,
                 read_stdout: bool = True, config: Path | None = None) -> None:
        self.proc = subprocess.Popen(
            [*rq_cli_command(), *(["--config", str(config)] if config else ["--no-config"]),
             "--url", server_url, *args, "push", "q", "-"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=env_without_rq_cli())
        self.ended = threading.Event()
        self.read_stdout = read_stdout
        self.printed = b""
        self.err = b""
        self.threads = [threading.Thread(target=self._feed, args=(lines,)),
                        threading.Thread(target=self._read_err)]
        if read_stdout:
            self.threads.append(threading.Thread(target=self._read_out))
        for thread in self.threads:
            thread.start()

    def _feed(self, lines: bytes) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        try:
            stdin.write(lines)
            stdin.flush()
            self.ended.wait()
        except BrokenPipeError:  # (the push ended before reading it all)
            pass
        finally:
            with contextlib.suppress(BrokenPipeError):
                stdin.close()

    def _read_out(self) -> None:
        assert self.proc.stdout is not None
        self.printed = self.proc.stdout.read()

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        self.err = self.proc.stderr.read()

    def finish(self) -> tuple[int, str, int]:
        """Its exit code, stderr and the lines it printed, once it ended by itself."""
        try:
            code = self.proc.wait(timeout=HANG)
        finally:
            self.ended.set()
            if self.proc.returncode is None:
                self.proc.kill()
        if not self.read_stdout:
            assert self.proc.stdout is not None
            self.printed = self.proc.stdout.read()
        for thread in self.threads:
            thread.join(timeout=HANG)
        return code, self.err.decode(), self.printed.count(b"\n")


def json_lines(n: int, first: int = 0) -> bytes:
    return b"".join(b'{"n":%d}\n' % i for i in range(first, first + n))


def _push_stopped_at(server_url: str, lines: bytes, at: float, sig: int) -> tuple[int, str,
                                                                                int]:
    """``rq-cli push q -`` fed ``lines`` by a pipe held open, sent ``sig`` ``at`` seconds after
    it started; its exit code, stderr and the number of lines it printed."""
    push = FedPush(server_url, lines)
    time.sleep(at)  # (any moment will do: the push cannot end before it)
    push.proc.send_signal(sig)
    return push.finish()


@pytest.fixture(scope="module")
def lines_300k() -> bytes:
    return json_lines(300_000)


MOMENTS = [(signal.SIGINT, at) for at in (0.05, 0.1, 0.2, 0.4, 0.8, 1.5)] + [
    (signal.SIGTERM, at) for at in (0.05, 0.4, 1.5)]


@pytest.fixture(scope="module")
def interpreter_start() -> float:
    """How long this machine's Python takes to start before running a program's first line
    (``python -c pass``, the least of three): a signal before that meets the interpreter's
    own defaults, which no program can change (a Ctrl-C there prints its traceback)."""
    import time

    took = []
    for _ in range(3):
        began = time.monotonic()
        subprocess.run([sys.executable, "-c", "pass"], check=True, env=env_without_rq_cli())
        took.append(time.monotonic() - began)
    return min(took)


#: tries of a moment that Python's start-up took (each later: a loaded machine starts slowly)
RETRIES = 8


def later(at: float) -> float:
    """The next moment to try after ``at`` fell in Python's own start-up: 0.05 s later or
    half as late again, whichever is later."""
    return max(at + 0.05, at * 1.5)


#: a traceback's frame inside the rq_cli package (not the console script's line naming it)
RQ_CLI_FRAME = re.compile(r'File "[^"]*[/\\]rq_cli[/\\]')


def before_our_first_line(code: int, err: str, sig: int) -> bool:
    """Whether ``sig`` ended the process by Python's own default before the console script
    reached rq-cli's first line (its imports, say, on a loaded machine): killed by the signal
    (before Python's own SIGINT handler, or any SIGTERM), or Python's KeyboardInterrupt
    traceback (after it, while the console script imports rq_cli, before rq-cli holds the
    signal). No program can handle that, so such a moment is tried again a little later. A
    signal that reached rq-cli is never ended so: it is held, then one line and exit 130."""
    if code == -sig:  # (no frame of the package: the console script's own line names it)
        return RQ_CLI_FRAME.search(err) is None
    return (sig == signal.SIGINT and code == 1
            and err.rstrip().endswith("KeyboardInterrupt") and "rq-cli:" not in err)


@pytest.mark.parametrize(("sig", "at"), MOMENTS,
                         ids=[f"{signal.Signals(s).name}-{at}" for s, at in MOMENTS])
def test_a_push_stopped_at_any_moment_says_exactly_what_was_stored(
        server_url: str, r: redis.Redis, lines_300k: bytes, interpreter_start: float,
        at: float, sig: int) -> None:
    """Ctrl-C (or SIGTERM, as ``timeout`` and systemd stop a process) at any moment of a
    push fed 300k lines by a pipe held open, from the imports of start-up on (``at`` seconds
    after the interpreter could run rq-cli's first line): one line, never a traceback, and
    the count it says (0 included) is what the server holds and what was printed; exit 130.
    (Fed from a file, a fast machine had finished before the later moments: no line.)"""
    at += interpreter_start
    for _ in range(RETRIES):
        code, err, printed = _push_stopped_at(server_url, lines_300k, at, sig)
        if not before_our_first_line(code, err, sig):
            break
        r.delete("q:queue")  # (nothing was stored: the signal ended Python's start-up)
        at = later(at)
    stored = r.llen("q:queue")
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert code == 130, err
    said = re.search(r"^rq-cli: interrupted: push: exactly (\d+) items? stored", err)
    assert said, err
    assert int(said.group(1)) == stored == printed


@pytest.mark.parametrize("at", [0.05, 0.1, 0.2])
def test_a_ctrl_c_in_start_up_of_any_command_is_one_line_never_a_traceback(
        server_url: str, interpreter_start: float, at: float) -> None:
    """Held from the console script's first line until the command is built: then one line,
    exit 130 (it was a traceback of the import it cut short)."""
    import time

    for _ in range(RETRIES):
        proc = subprocess.Popen([*rq_cli_command(), "--no-config", "--url", server_url,
                                 "lease", "q", "--wait", "30"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env_without_rq_cli())
        time.sleep(interpreter_start + at)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        if not before_our_first_line(proc.returncode, err.decode(), signal.SIGINT):
            break
        at = later(at)
    assert proc.returncode == 130, err
    assert b"Traceback" not in err and err.count(b"\n") == 1, err


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_push_waiting_for_input_stops_at_a_signal_with_the_exact_count(
        server_url: str, r: redis.Redis, sig: int) -> None:
    """Fed 2,500 lines by a pipe that then stays open, the push has stored two batches and
    waits for the rest of the third: a signal ends the wait (the handler only records it:
    the read waits on the wakeup pipe too); the two batches are counted, exactly."""
    push = FedPush(server_url, json_lines(2_500))
    wait_for(lambda: r.llen("q:queue") == 2_000, HANG, "two batches stored", step=0.01)
    push.proc.send_signal(sig)
    code, err, printed = push.finish()
    assert code == 130 and err.count("\n") == 1, err
    assert err.startswith("rq-cli: interrupted: push: exactly 2000 items stored"), err
    assert printed == r.llen("q:queue") == 2_000


def test_a_sharded_push_stopped_while_waiting_for_input_says_exactly_what_was_stored(
        server_url: str, r: redis.Redis, tmp_path: Path, cli) -> None:
    """The same for a queue of two shards (each shard's part of a batch stored by its own
    stream): a signal while the push waits for input, nothing in flight: the exact count."""
    config = write_config(tmp_path, '[queues.q]\nprefix = "q"\nshards = 2\n')
    assert cli("--config", str(config), "reshard", "q", "2").exit_code == 0
    push = FedPush(server_url, json_lines(2_500), config=config)
    wait_for(lambda: sum(r.llen(f"q~1.{n}:queue") for n in (0, 1)) == 2_000, HANG,
             "two batches stored", step=0.01)
    push.proc.send_signal(signal.SIGTERM)
    code, err, printed = push.finish()
    assert code == 130 and err.count("\n") == 1, err
    assert err.startswith("rq-cli: interrupted: push: exactly 2000 items stored"), err
    assert printed == 2_000


def test_a_second_signal_ends_a_push_at_once_saying_what_it_stored(
        server_url: str, r: redis.Redis, lines_300k: bytes) -> None:
    """A push whose stdout nobody reads blocks writing it; a first signal is recorded for
    the next safe point, which it never reaches; a second one ends it at once: exit 130,
    one line saying how many items were stored and printed, and that a batch in flight
    may have been stored too."""
    push = FedPush(server_url, lines_300k, read_stdout=False)
    wait_for(lambda: r.llen("q:queue") >= 2_000, HANG, "batches stored", step=0.01)
    push.proc.send_signal(signal.SIGINT)
    push.proc.send_signal(signal.SIGTERM)  # (a second SIGINT might merge with the first)
    code, err, printed = push.finish()
    assert code == 130 and err.count("\n") == 1, err
    said = re.search(r"^rq-cli: interrupted twice: push: stopped at once; (\d+) items? stored",
                     err)
    assert said, err
    assert "a batch in flight may also have been stored" in err
    assert int(said.group(1)) <= printed <= r.llen("q:queue")


@pytest.mark.parametrize("with_ids", [False, True], ids=["lines", "with-ids"])
def test_a_push_stopped_by_a_batch_not_confirmed_names_the_lines_never_sent(
        make_server, with_ids: bool) -> None:
    """``wait_replicas = 1`` and no replica: the batches sent are stored, none confirmed,
    and the push sends nothing more (exit 8). The error line names the input lines never
    sent (two blank lines first: line numbers are the input's)."""
    from rq_cli.core.contract.limits import BATCH, SEND_AHEAD

    server = make_server()
    body = b"".join(b'{"id":"i%d","data":%d}\n' % (n, n) for n in range(20_000)) \
        if with_ids else json_lines(20_000)
    done = subprocess.run(
        [*rq_cli_command(), "--no-config", "--url", server.url, "--wait-replicas", "1",
         "--wait-timeout", "0.1", "push", "q", "-", *(["--with-ids"] if with_ids else [])],
        input=b"\n \n" + body, capture_output=True, timeout=HANG, env=env_without_rq_cli())
    sent = SEND_AHEAD * BATCH
    assert done.returncode == 8, done.stderr[-2000:]
    assert done.stdout == b""
    last = done.stderr.decode().splitlines()[-1]
    assert f"then {sent} items not confirmed" in last, last
    assert (f"input lines {sent + 3} to 20002 ({20_000 - sent} lines) were never sent: "
            f"push them next") in last, last
    assert server.client().llen("q:queue") == sent
