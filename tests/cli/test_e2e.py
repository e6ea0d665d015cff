"""End-to-end: the installed ``rq-cli`` in subprocesses, joined by real pipes, as a shell runs it.

Each command is its own process (``rq-cli`` next to ``sys.executable``, else
``python -m rq_cli``) with a clean environment: no rq-cli variables, no config file, and
``--url`` naming the suite's server. Pipelines are built from ``Popen`` objects the way a
shell builds them, so every stage's exit code and stderr are checked separately; the stored
data is checked with a plain redis client (``r``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest
import redis
from cli_helpers import rq_cli_command

import rq_cli
from rq_cli.connection import embedded
from rq_cli.errors import ExitCode

TIMEOUT = 90


RQ_CLI = rq_cli_command()


@dataclass
class Done:
    returncode: int
    stdout: bytes
    stderr: bytes

    @property
    def json(self) -> list[Any]:
        return [json.loads(line) for line in self.stdout.splitlines() if line]

    @property
    def message(self) -> str:
        return self.stderr.decode("utf-8", "replace")


@dataclass
class Shell:
    """Runs rq-cli commands in ``cwd`` with a clean environment (no config file found)."""

    url: str | None
    cwd: Path
    env: dict[str, str]

    def argv(self, *args: str) -> list[str]:
        return [*RQ_CLI, *(["--url", self.url] if self.url else []), *args]

    def run(self, *args: str, stdin: bytes | IO[bytes] | None = None) -> Done:
        return self.pipeline([self.argv(*args)], stdin=stdin)[-1]

    def pipeline(self, commands: Sequence[Sequence[str]],
                 stdin: bytes | IO[bytes] | None = None) -> list[Done]:
        """``a | b | c``: real OS pipes between the processes; a Done per stage (only the last
        has stdout). Each stage's stderr goes to its own file, so no stage can block on it;
        ``stdin`` bytes are fed from a thread, so a long pipeline cannot deadlock."""
        procs: list[subprocess.Popen[bytes]] = []
        feed = stdin if isinstance(stdin, bytes) else None
        upstream: Any = subprocess.PIPE if feed is not None else (stdin or subprocess.DEVNULL)
        with contextlib.ExitStack() as stack:
            errs = [stack.enter_context(tempfile.TemporaryFile()) for _ in commands]
            try:
                for command, err in zip(commands, errs, strict=True):
                    proc = subprocess.Popen(list(command), stdin=upstream,
                                            stdout=subprocess.PIPE, stderr=err, cwd=self.cwd,
                                            env=self.env)
                    if procs:
                        upstream.close()  # the next stage holds it now: SIGPIPE can reach
                    procs.append(proc)
                    upstream = proc.stdout
                feeder = threading.Thread(target=_feed, args=(procs[0].stdin, feed))
                if feed is not None:
                    procs[0].stdin = None  # the feeder's alone (communicate must not touch it)
                    feeder.start()
                out, _ = procs[-1].communicate(timeout=TIMEOUT)
                codes = [proc.wait(timeout=TIMEOUT) for proc in procs]
                if feed is not None:
                    feeder.join(TIMEOUT)
            finally:
                for proc in procs:
                    if proc.poll() is None:
                        proc.kill()
                        proc.wait()
            results = []
            for n, (code, err) in enumerate(zip(codes, errs, strict=True)):
                err.seek(0)
                results.append(Done(code, out if n == len(procs) - 1 else b"", err.read()))
            return results


def _feed(stream: IO[bytes] | None, data: bytes) -> None:
    assert stream is not None
    try:
        stream.write(data)
    except BrokenPipeError:  # the first stage stopped reading: its exit code tells
        pass
    finally:
        with contextlib.suppress(BrokenPipeError):
            stream.close()


def clean_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RQ_CLI_", "_RQ_CLI_", "_TYPER_")) and k != "REDIS_URL"}
    env["XDG_CONFIG_HOME"] = str(home / "xdg")
    return env


@pytest.fixture
def sh(server_url: str, tmp_path: Path) -> Shell:
    work = tmp_path / "work"
    work.mkdir()
    return Shell(server_url, work, clean_env(tmp_path))


def jsonl(rows: Sequence[Any]) -> bytes:
    return b"".join(json.dumps(row).encode() + b"\n" for row in rows)


def varied_lines(count: int) -> list[bytes]:
    """JSON lines of several shapes, spacings and encodings (stored as given, byte for byte)."""
    shapes = [
        lambda n: json.dumps({"n": n, "to": f"user{n}@example.com"}),
        lambda n: json.dumps({"n": n, "text": "caf\u00e9 \u2603 [bold]x[/bold] <b>"},
                             ensure_ascii=False),
        lambda n: json.dumps({"n": n, "text": "caf\u00e9 \u2603"}),  # \u escapes kept as is
        lambda n: f'{{ "n" : {n} ,  "nested": {{"a": [1, 2.50, -0.0, 1e3, null, true]}} }}',
        lambda n: f'[{n}, "tab\\tnewline\\n", {{}}]',
        lambda n: f'"just a string {n}"',
        lambda n: str(10**30 + n),
    ]
    return [shapes[n % len(shapes)](n).encode("utf-8") for n in range(count)]


def stats(sh: Shell, queue: str) -> dict[str, Any]:
    done = sh.run("stats", queue)
    assert done.returncode == 0, done.message
    (row,) = done.json
    return row  # type: ignore[no-any-return]


# -- push from a file ---------------------------------------------------------------------------
def test_push_a_file_from_stdin(sh: Shell, r: redis.Redis, tmp_path: Path) -> None:
    lines = varied_lines(3000)
    source = tmp_path / "jobs.jsonl"
    source.write_bytes(b"\n".join(lines) + b"\n")
    with source.open("rb") as stdin:  # rq-cli push q - < jobs.jsonl
        done = sh.run("push", "q", "-", stdin=stdin)
    assert done.returncode == 0, done.message
    assert done.stderr == b""  # stderr is not a terminal: no progress bar, no messages
    results = done.json
    assert len(results) == len(lines) and all(row["added"] is True for row in results)
    ids = [row["id"] for row in results]
    assert len(set(ids)) == len(ids)
    assert r.mget([f"q:item:{i}" for i in ids]) == lines  # byte-identical, in push order
    assert r.llen("q:queue") == len(lines)
    peeked = sh.run("peek", "q", "-n", str(len(lines)))
    assert [row["id"] for row in peeked.json] == ids  # leased in the order of the file
    assert [row["data"] for row in peeked.json] == [json.loads(line) for line in lines]
    assert stats(sh, "q")["pending"] == len(lines)


def test_bad_json_line_stores_the_lines_before_it(sh: Shell, r: redis.Redis) -> None:
    lines = varied_lines(3000)
    lines[2499] = b'{"n": 2500,}'  # line 2500: past two full batches of 1000
    done = sh.run("push", "q", "-", stdin=b"\n".join(lines) + b"\n")
    assert done.returncode == ExitCode.DATA  # 65
    assert "line 2500" in done.message and "Traceback" not in done.message
    assert "2499 items stored" in done.message
    ids = [row["id"] for row in done.json]
    assert len(ids) == 2499  # everything before the bad line was stored and reported
    assert r.llen("q:queue") == 2499
    assert r.mget([f"q:item:{i}" for i in ids]) == lines[:2499]
    assert stats(sh, "q")["pending"] == 2499  # nothing after it


# -- lease | complete ---------------------------------------------------------------------------
def test_lease_pipe_complete(sh: Shell, r: redis.Redis) -> None:
    pushed = sh.run("push", "q", "-", stdin=jsonl([{"job": n} for n in range(50)]))
    assert pushed.returncode == 0, pushed.message
    ids = {row["id"] for row in pushed.json}
    lease, complete = sh.pipeline([sh.argv("lease", "q", "--count", "50"),
                                   sh.argv("complete", "q", "-")])
    assert (lease.returncode, lease.stderr) == (0, b"")
    assert (complete.returncode, complete.stderr) == (0, b""), complete.message
    outcomes = complete.json
    assert {row["id"] for row in outcomes} == ids
    assert all(row["outcome"] == "completed" and row["queue"] == "q" for row in outcomes)
    after = stats(sh, "q")
    assert (after["pending"], after["processing"], after["leased"]) == (0, 0, 0)
    assert after["counters"]["completed"] == 50
    assert r.keys("q:item:*") == []
    assert sh.run("lease", "q").returncode == ExitCode.NOTHING


def test_lease_worker_complete_pipeline(sh: Shell, tmp_path: Path) -> None:
    """lease | a worker that passes on the jobs it did | complete -; the rest fail --dead."""
    worker = tmp_path / "worker.py"
    worker.write_text(
        "import json, sys\n"
        "failed = open(sys.argv[1], 'w')\n"
        "for line in sys.stdin:\n"
        "    job = json.loads(line)\n"
        "    out = failed if job['data']['n'] % 3 == 0 else sys.stdout\n"
        "    out.write(line)\n"
        "    out.flush()\n")
    failed = tmp_path / "failed.jsonl"
    assert sh.run("push", "q", "-", stdin=jsonl([{"n": n} for n in range(40)])).returncode == 0
    stages = sh.pipeline([sh.argv("lease", "q", "--count", "40"),
                          [sys.executable, str(worker), str(failed)],
                          sh.argv("complete", "q", "-")])
    assert [stage.returncode for stage in stages] == [0, 0, 0], [s.message for s in stages]
    done = stages[-1].json
    assert len(done) == 26 and all(row["outcome"] == "completed" for row in done)
    middle = stats(sh, "q")
    assert (middle["pending"], middle["processing"]) == (0, 14)  # still leased
    with failed.open("rb") as stdin:
        dead = sh.run("fail", "q", "--dead", "--error", "n % 3 == 0", "-", stdin=stdin)
    assert dead.returncode == 0, dead.message
    assert [row["outcome"] for row in dead.json] == ["dead"] * 14
    after = stats(sh, "q")
    assert (after["pending"], after["processing"], after["dead"]) == (0, 0, 14)
    peeked = sh.run("peek", "q", "--state", "dead", "-n", "100").json
    assert sorted(row["data"]["n"] for row in peeked) == list(range(0, 40, 3))
    assert {row["error"] for row in peeked} == {"n % 3 == 0"}


# -- peek | push --with-ids -----------------------------------------------------------------------
def test_peek_push_with_ids_round_trip(sh: Shell, r: redis.Redis) -> None:
    lines = varied_lines(300)
    assert sh.run("push", "src", "-", stdin=b"\n".join(lines)).returncode == 0
    peek, push = sh.pipeline([sh.argv("peek", "src", "-n", "1000"),
                              sh.argv("push", "dst", "--with-ids", "-")])
    assert (peek.returncode, push.returncode) == (0, 0), (peek.message, push.message)
    assert all(row["added"] for row in push.json) and len(push.json) == 300
    order: list[bytes] = list(r.lrange("src:queue", 0, -1))  # type: ignore[arg-type]
    assert r.lrange("dst:queue", 0, -1) == order  # same ids, same order
    assert r.mget([b"dst:item:" + i for i in order]) == r.mget([b"src:item:" + i for i in order])
    assert r.llen("src:queue") == 300  # peek changed nothing
    again = sh.pipeline([sh.argv("peek", "src", "-n", "1000"),
                         sh.argv("push", "dst", "--with-ids", "--summary", "-")])[-1]
    assert again.json == [{"queue": "dst", "items": 300, "added": 0, "duplicates": 300,
                           "reasons": {"duplicate": 300, "dead": 0, "recently completed": 0}}]


def test_peek_push_with_ids_keeps_whitespace_around_json(sh: Shell, r: redis.Redis) -> None:
    """Whitespace around a JSON payload is data too: peek prints such a payload as text
    marked ``"raw": true``, and the re-import stores the same bytes."""
    assert sh.run("push", "src", "-", stdin=b'  {"a": 1}  \n').returncode == 0
    stages = sh.pipeline([sh.argv("peek", "src"), sh.argv("push", "dst", "--with-ids", "-")])
    assert [stage.returncode for stage in stages] == [0, 0]
    (item_id,) = list[bytes](r.lrange("src:queue", 0, -1))  # type: ignore[arg-type]
    assert r.get(b"src:item:" + item_id) == b'  {"a": 1}  '
    assert r.get(b"dst:item:" + item_id) == b'  {"a": 1}  '


# -- exit codes through real processes ----------------------------------------------------------
def test_lease_on_an_empty_queue_exits_3(sh: Shell) -> None:
    done = sh.run("lease", "empty", "--wait", "0.2")
    assert done.returncode == ExitCode.NOTHING  # 3
    assert done.stdout == b""
    assert done.message.startswith("rq-cli: ") and done.message.count("\n") == 1


def read_one_line_then_close(sh: Shell, *args: str, env: dict[str, str]) -> tuple[bytes, int,
                                                                               bytes]:
    """``rq-cli ARGS | head -n 1``: (the line, rq-cli's exit code, its stderr)."""
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(sh.argv(*args), stdout=subprocess.PIPE, stderr=err,
                                stdin=subprocess.DEVNULL, cwd=sh.cwd, env=env)
        assert proc.stdout is not None
        first = proc.stdout.readline()
        proc.stdout.close()  # like head: one line, then gone
        code = proc.wait(timeout=TIMEOUT)
        err.seek(0)
        return first, code, err.read()


def test_reader_closing_the_pipe_early(sh: Shell) -> None:
    """``rq-cli peek q -n 5000 | head -n 1``: peek ends quietly with 141 (128 + SIGPIPE)."""
    assert sh.run("push", "q", "-", stdin=b"\n".join(varied_lines(5000))).returncode == 0
    env = {k: v for k, v in sh.env.items() if k != "PYTHONUNBUFFERED"}
    first, code, err = read_one_line_then_close(sh, "peek", "q", "-n", "5000", env=env)
    assert json.loads(first)["data"] == {"n": 0, "to": "user0@example.com"}
    assert (code, err) == (ExitCode.BROKEN_PIPE, b"")


def test_reader_closing_the_pipe_early_unbuffered(sh: Shell) -> None:
    assert sh.run("push", "q", "-", stdin=b"\n".join(varied_lines(5000))).returncode == 0
    env = {**sh.env, "PYTHONUNBUFFERED": "1"}
    first, code, err = read_one_line_then_close(sh, "peek", "q", "-n", "5000", env=env)
    assert json.loads(first)["data"] == {"n": 0, "to": "user0@example.com"}
    assert (code, err) == (ExitCode.BROKEN_PIPE, b"")


def test_python_m_rq_cli_version(tmp_path: Path) -> None:
    expected = f"rq-cli {rq_cli.__version__}\n".encode()
    for command in ([sys.executable, "-m", "rq_cli"], RQ_CLI):
        done = subprocess.run([*command, "--version"], capture_output=True, timeout=TIMEOUT,
                              cwd=tmp_path, env=clean_env(tmp_path), check=False)
        assert (done.returncode, done.stdout, done.stderr) == (0, expected, b""), command



# -- the console script exits without the interpreter's teardown (rq_cli.cli.root.hard_exit) --
def test_every_byte_reaches_a_file_before_the_hard_exit(sh: Shell) -> None:
    """stdout to a file is block-buffered: the last block is flushed before os._exit."""
    lines = varied_lines(5000)
    assert sh.run("push", "q", "-", stdin=b"\n".join(lines)).returncode == 0
    out = sh.cwd / "peek.jsonl"
    env = {k: v for k, v in sh.env.items() if k != "PYTHONUNBUFFERED"}
    with out.open("wb") as f:
        done = subprocess.run(sh.argv("peek", "q", "-n", "5000"), stdout=f,
                              stderr=subprocess.PIPE, cwd=sh.cwd, env=env, timeout=TIMEOUT)
    assert (done.returncode, done.stderr) == (0, b"")
    rows = [json.loads(line) for line in out.read_bytes().splitlines()]
    assert [row["data"] for row in rows] == [json.loads(line) for line in lines]


def run_python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=TIMEOUT, check=False)


@pytest.mark.parametrize(("args", "code"), [(["--version"], 0), (["nosuch"], 2)])
def test_hard_exit_runs_atexit_handlers_and_keeps_the_exit_code(
        tmp_path: Path, args: list[str], code: int) -> None:
    """What an atexit handler writes to a block-buffered stdout is flushed too."""
    env = {k: v for k, v in clean_env(tmp_path).items() if k != "PYTHONUNBUFFERED"}
    done = run_python(
        "import atexit, sys\n"
        "atexit.register(lambda: print('atexit ran'))\n"
        f"sys.argv = ['rq-cli', *{args!r}]\n"
        "from rq_cli.cli import run\n"
        "run()\n"
        "print('not reached')\n", env)
    assert done.returncode == code
    assert done.stdout.endswith("atexit ran\n")
    assert "not reached" not in done.stdout


def test_hard_exit_waits_for_a_running_thread(tmp_path: Path) -> None:
    """With another thread alive, the exit is the interpreter's own, which joins it."""
    done = run_python(
        "import sys, threading, time\n"
        "threading.Thread(target=lambda: (time.sleep(0.3), print('thread done'))).start()\n"
        "sys.argv = ['rq-cli', '--version']\n"
        "from rq_cli.cli import run\n"
        "run()\n", clean_env(tmp_path))
    assert (done.returncode, done.stderr) == (0, "")
    # both lines, in either order (on a busy machine the thread may print first): what
    # matters is that the exit waited for the thread's line
    assert sorted(done.stdout.splitlines()) == sorted([f"rq-cli {rq_cli.__version__}",
                                                       "thread done"])


def test_hard_exit_flushes_what_is_still_buffered(tmp_path: Path) -> None:
    env = {k: v for k, v in clean_env(tmp_path).items() if k != "PYTHONUNBUFFERED"}
    done = run_python("import sys\nsys.stdout.write('x' * 100)\n"
                      "from rq_cli.cli.root import hard_exit\nhard_exit(3)\n", env)
    assert (done.returncode, done.stdout, done.stderr) == (3, "x" * 100, "")


def test_hard_exit_with_a_message(tmp_path: Path) -> None:
    """``sys.exit("text")`` semantics: the text on stderr, exit 1."""
    done = run_python("from rq_cli.cli.root import hard_exit\nhard_exit('rq-cli: stop')\n",
                      clean_env(tmp_path))
    assert (done.returncode, done.stdout, done.stderr) == (1, "", "rq-cli: stop\n")


# -- the embedded server: the README's quick start -------------------------------------------------
@pytest.fixture
def embedded_dir(tmp_path: Path) -> Iterator[Path]:
    """A short directory (unix socket paths are limited) whose server is always stopped."""
    base = Path(tempfile.mkdtemp(prefix="rqe2e-"))
    directory = base / "data"
    try:
        yield directory
    finally:
        try:
            subprocess.run([*RQ_CLI, "server", "stop", str(directory)], capture_output=True,
                           timeout=TIMEOUT, cwd=tmp_path, env=clean_env(tmp_path), check=False)
            embedded.stop(directory, timeout=5)  # in case the command could not
        finally:
            pid = embedded._read_pid(directory) if directory.exists() else None
            if pid is not None and embedded._is_server(pid):
                os.kill(pid, signal.SIGKILL)
            shutil.rmtree(base, ignore_errors=True)


def test_embedded_server_quick_start(embedded_dir: Path, tmp_path: Path) -> None:
    sh = Shell(f"embedded:{embedded_dir}", tmp_path, clean_env(tmp_path))
    pushed = sh.run("push", "jobs", '{"task": "hello"}')
    assert pushed.returncode == 0, pushed.message
    (item_id,) = [row["id"] for row in pushed.json]
    lease, complete = sh.pipeline([sh.argv("lease", "jobs"), sh.argv("complete", "jobs", "-")])
    assert (lease.returncode, complete.returncode) == (0, 0), (lease.message, complete.message)
    assert complete.json == [{"queue": "jobs", "id": item_id, "outcome": "completed"}]
    after = stats(sh, "jobs")
    assert (after["pending"], after["processing"], after["counters"]["completed"]) == (0, 0, 1)
    status = sh.run("server", "status")
    assert status.returncode == 0 and status.json[0]["running"] is True
    # queues survive the server: stop it, and the next command starts it again from disk
    assert sh.run("push", "jobs", '{"task": "later"}').returncode == 0
    stopped = sh.run("server", "stop")
    assert stopped.returncode == 0 and stopped.json[0]["stopped"] is True
    no_url = Shell(None, tmp_path, clean_env(tmp_path))
    assert no_url.run("server", "status", str(embedded_dir)).returncode == ExitCode.NOTHING
    assert stats(sh, "jobs")["pending"] == 1
    assert no_url.run("server", "stop", str(embedded_dir)).returncode == 0

