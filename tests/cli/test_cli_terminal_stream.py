"""``peek`` on a real terminal: rows are drawn page by page as they are read, in
flat memory, and the first Ctrl-C ends it within a second with exit 130 and a count.

``rq-cli`` runs on a pseudo-terminal of 80x24 read through pyte (tests/cli/test_cli_watch.py).
"""

from __future__ import annotations

import os
import re
import select
import signal
import termios
import time

import redis
from test_cli_watch import Terminal

from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem

pytest_plugins = ["cli_helpers"]

ID = re.compile(r"\bi-\d{6}\b")


def fill(r: redis.Redis, queue: str, count: int) -> None:
    wq = WorkQueue(r, queue)
    for start in range(0, count, 5000):
        wq.push([NewItem(b'{"n": %d}' % n, id=f"i-{n:06d}")
                 for n in range(start, min(count, start + 5000))])


def read_raw(term: Terminal, seconds: float) -> None:
    """Read what the program wrote for ``seconds``, into ``term.raw`` (no emulator: pyte
    is slower than rq-cli draws)."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        ready, _, _ = select.select([term.master], [], [], left)
        if not ready:
            return
        try:
            chunk = os.read(term.master, 1 << 16)
        except OSError:  # the program ended and the pty closed
            return
        if not chunk:
            return
        term.raw += chunk


def read_until_row(term: Terminal, timeout: float) -> float:
    """Seconds until the first row of ids is drawn."""
    started = time.monotonic()
    while not ID.search(term.raw.decode("utf-8", "replace")):
        assert time.monotonic() - started < timeout, term.raw[-2000:]
        read_raw(term, 0.01)
    return time.monotonic() - started


def wait_exit(term: Terminal, timeout: float) -> int | None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        read_raw(term, 0.02)
        code = term.proc.poll()
        if code is not None:
            read_raw(term, 0.2)
            return code
    return None


def test_peek_draws_the_first_rows_at_once_and_ctrl_c_ends_it_within_a_second(
        server_url, r) -> None:
    fill(r, "big", 200_000)
    term = Terminal(["--url", server_url, "peek", "big", "-n", "200000"])
    try:
        first = read_until_row(term, timeout=10)
        assert first < 3  # (a buffered peek drew nothing until all 200k were read)
        assert term.proc.poll() is None  # still drawing: the rows came before the end
        read_raw(term, 0.2)
        # (NOFLSH: the terminal keeps the rows written and not yet read at a Ctrl-C; by
        # default it drops them, which on a loaded machine left rows counted as shown unread)
        attrs = termios.tcgetattr(term.master)
        attrs[3] |= termios.NOFLSH
        termios.tcsetattr(term.master, termios.TCSANOW, attrs)
        os.write(term.master, b"\x03")  # the terminal's Ctrl-C: SIGINT to the foreground
        asked = time.monotonic()
        code = wait_exit(term, 5)
        took = time.monotonic() - asked
        assert code == 130, term.raw[-2000:]
        assert took < 1.0, took
        text = term.raw.decode("utf-8", "replace")
        found = re.search(r"rq-cli: interrupted: peek big: ([\d,]+) items shown", text)
        assert found, text[-2000:]
        shown = int(found.group(1).replace(",", ""))
        assert 0 < shown < 200_000
        drawn = set(ID.findall(text))
        assert len(drawn) >= shown - 1  # every row counted was drawn (a last cut line aside)
    finally:
        term.close()


def test_peek_on_a_terminal_sigint_while_blocked_on_output(server_url, r) -> None:
    """Nobody reads the terminal (a paused pager, Ctrl-S): SIGINT still ends it at once."""
    fill(r, "big", 50_000)
    term = Terminal(["--url", server_url, "peek", "big", "-n", "50000"])
    try:
        read_until_row(term, timeout=10)
        time.sleep(1.0)  # not read meanwhile: the pty's buffer fills and writes block
        assert term.proc.poll() is None
        os.killpg(term.proc.pid, signal.SIGINT)
        asked = time.monotonic()
        code = wait_exit(term, 5)
        assert code == 130 and time.monotonic() - asked < 1.0
        assert b"interrupted: peek big:" in term.raw
    finally:
        term.close()


def test_peek_table_pages_share_one_header_and_all_rows_are_drawn(cli, r) -> None:
    fill(r, "q", 450)  # three pages of PAGE_ROWS (200)
    run = cli("peek", "q", "-n", "450", tty=True, width=80)
    assert run.exit_code == 0, run
    lines = [line for line in run.stdout.splitlines() if line.strip()]
    assert sum(1 for line in lines if line.split()[:2] == ["id", "data"]) == 1
    ids = ID.findall(run.stdout)
    assert ids == [f"i-{n:06d}" for n in range(449, -1, -1)] or \
        sorted(ids) == [f"i-{n:06d}" for n in range(450)]
    starts = {line.index(match.group()) for line in lines for match in [ID.search(line)]
              if match}
    assert len(starts) == 1  # every page's id column starts at the same place


def test_peek_piped_ctrl_c_says_how_many_lines_it_wrote(server_url, r) -> None:
    import subprocess
    import sys

    from test_cli_watch import rq_cli_env

    fill(r, "big", 100_000)
    proc = subprocess.Popen([sys.executable, "-m", "rq_cli", "--url", server_url, "peek", "big",
                             "-n", "100000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=rq_cli_env())
    assert proc.stdout is not None
    first = proc.stdout.readline()
    assert first.startswith(b'{"id":"i-')
    time.sleep(0.2)  # not read meanwhile: the pipe fills and the writes block
    proc.send_signal(signal.SIGINT)
    asked = time.monotonic()
    out, err = proc.communicate(timeout=5)
    assert proc.returncode == 130 and time.monotonic() - asked < 1.0, err
    found = re.search(rb"rq-cli: interrupted: peek big: ([\d,]+) items shown\n$", err)
    assert found, err
    lines = 1 + out.count(b"\n")
    assert 0 < int(found.group(1).replace(b",", b"")) <= lines < 100_000
