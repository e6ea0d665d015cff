"""rq-cli stats --watch: the live dashboard on a real pseudo-terminal, and JSON lines in a pipe.

The dashboard tests run ``rq-cli`` on a pty of 80x24 and read what it draws through a
terminal emulator (pyte): the rows, the headers unsplit, redraws in place (no line ever
scrolls off the top), Ctrl-C, and a server that goes away and comes back.
"""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable

import pyte
import pytest

from rq_cli.core.queue import WorkQueue
from rq_cli.output.metrics import rates

pytest_plugins = ["cli_helpers"]  # the cli(...) fixture

HEADERS = "queue pending leased aband. delayed dead oldest push/s done/s fail/s dead/s"


def rq_cli_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RQ_CLI_")}
    env.update(TERM="xterm-256color", RQ_CLI_NO_CONFIG="1")
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    return env


class Terminal:
    """``rq-cli ARGS`` on a pseudo-terminal of ``cols`` x ``rows``, seen through pyte."""

    def __init__(self, args: list[str], cols: int = 80, rows: int = 24) -> None:
        self.screen = pyte.HistoryScreen(cols, rows, history=1000)
        self.stream = pyte.ByteStream(self.screen)
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

        def controlling_terminal() -> None:  # (after setsid: the pty becomes the ctty)
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.proc = subprocess.Popen([sys.executable, "-m", "rq_cli", *args], stdin=slave,
                                     stdout=slave, stderr=slave, env=rq_cli_env(),
                                     start_new_session=True, preexec_fn=controlling_terminal)
        os.close(slave)
        self.raw = b""

    def pump(self, seconds: float = 0.05) -> None:
        """Feed what the program wrote (waiting up to ``seconds``) to the emulator."""
        end = time.monotonic() + seconds
        while True:
            left = end - time.monotonic()
            ready, _, _ = select.select([self.master], [], [], max(left, 0))
            if not ready:
                return
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # the program ended and the pty closed
                return
            if not chunk:
                return
            self.raw += chunk
            self.stream.feed(chunk)

    @property
    def lines(self) -> list[str]:
        return [line.rstrip() for line in self.screen.display]

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    @property
    def scrolled_off(self) -> int:
        """Lines that scrolled off the top of the screen (a redraw that did not happen in
        place pushes the old frame up)."""
        return len(self.screen.history.top)

    def wait_for(self, predicate: Callable[[str], bool], timeout: float = 15.0) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.pump(0.1)
            if predicate(self.text):
                return self.text
        raise AssertionError(f"timed out; the screen shows:\n{self.text}")

    def row(self, queue: str) -> list[str]:
        for line in self.lines:
            words = line.split()
            if words and words[0] == queue:
                return words
        raise AssertionError(f"no row for {queue!r}:\n{self.text}")

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        os.close(self.master)


@pytest.fixture
def terminal():
    made: list[Terminal] = []

    def start(*args: str) -> Terminal:
        made.append(Terminal(list(args)))
        return made[-1]

    yield start
    for t in made:
        t.close()


def test_dashboard_draws_the_rows_and_redraws_them_in_place(terminal, server_url, r):
    emails = WorkQueue(r, "myapp:{emails}")
    jobs = WorkQueue(r, "jobs")
    emails.push([b"{}"] * 5)
    jobs.push([b"{}"] * 3)
    jobs.lease(2, lease_seconds=0.05)  # abandoned once the lease runs out
    jobs.pause()
    time.sleep(0.1)
    t = terminal("--url", server_url, "stats", "myapp:{emails}", "jobs", "--watch",
                 "--interval", "0.2")
    t.wait_for(lambda text: "jobs" in text and "paused: jobs" in text)
    # no header split; a long queue name is whole, so the last rate column gives way
    assert HEADERS.rsplit(" ", 1)[0] in [" ".join(line.split()) for line in t.lines]
    assert "not shown at 80 columns: dead/s (--json, a wider terminal)" in t.text
    assert all(len(line) <= 80 for line in t.lines)
    assert t.row("myapp:{emails}")[1:6] == ["5", "0", "0", "0", "0"]
    assert t.row("jobs")[1:6] == ["1", "0", "2", "0", "0"]
    # work happens: the same rows change in place, with rates
    t.wait_for(lambda text: t.row("jobs")[7] != "-")  # rates once two reads were made
    emails.push([b"{}"] * 20)
    done = emails.lease(10)
    emails.complete([i.id for i in done])
    t.wait_for(lambda text: t.row("myapp:{emails}")[1] == "15")
    t.wait_for(lambda text: t.raw.count(b"Ctrl-C quits") >= 6)  # redrawn many times ...
    assert t.text.count("Ctrl-C quits") == 1  # ... always over itself:
    assert t.scrolled_off == 0  # nothing ever scrolled off the top
    # Ctrl-C ends it cleanly: exit 0, no traceback, no "^C", the last frame left in place
    os.write(t.master, b"\x03")
    assert t.proc.wait(timeout=10) == 0
    t.pump(0.3)
    assert "Traceback" not in t.text and "^C" not in t.text
    assert t.text.count("Ctrl-C quits") == 1 and t.scrolled_off == 0
    assert t.row("jobs")[1:6] == ["1", "0", "2", "0", "0"]


def test_a_server_gone_is_an_error_row_and_the_view_recovers(terminal, make_server):
    server = make_server()
    WorkQueue(server.client(), "jobs").push([b"{}"] * 4)
    t = terminal("--url", server.url, "stats", "jobs", "--watch", "--interval", "0.2")
    t.wait_for(lambda text: "jobs" in text and t.row("jobs")[1] == "4")
    server.stop()
    t.wait_for(lambda text: "error" in text)
    assert t.row("jobs")[1] == "error"
    # (a read in flight at the stop says the connection was lost; the next ones cannot connect)
    t.wait_for(lambda text: "jobs: cannot connect to redis://127.0.0.1:" in " ".join(text.split()))
    assert t.row("jobs")[1] == "error"
    assert t.proc.poll() is None  # it keeps running
    server.start()
    WorkQueue(server.client(), "jobs").push([b"{}"] * 2)  # (no persistence: 2 items now)
    t.wait_for(lambda text: "error" not in text and t.row("jobs")[1] == "2")
    assert t.text.count("Ctrl-C quits") == 1 and t.scrolled_off == 0
    os.write(t.master, b"\x03")
    assert t.proc.wait(timeout=10) == 0


# -- JSON lines -----------------------------------------------------------------------------------
def test_watch_prints_json_lines_per_queue_per_interval_when_piped(cli):
    cli("push", "a", "1", "2")
    cli("push", "b", "1")
    run = cli("stats", "a", "b", "--watch", "--interval", "0.1", "--iterations", "3")
    assert run.exit_code == 0, run
    rows = run.json
    assert [row["queue"] for row in rows] == ["a", "b"] * 3
    assert [row["pending"] for row in rows[:2]] == [2, 1]
    assert rows[0]["rates"] is None and rows[1]["rates"] is None  # nothing to compare yet
    assert rows[2]["rates"] == {"pushed": 0.0, "completed": 0.0, "failed": 0.0, "dead": 0.0}
    assert rows[4]["at"] - rows[0]["at"] == pytest.approx(0.2, abs=0.15)


def test_watch_rates_come_from_the_counters(server_url, r):
    proc = subprocess.Popen([sys.executable, "-m", "rq_cli", "--url", server_url, "stats", "q",
                             "--watch", "--interval", "0.5"], stdout=subprocess.PIPE,
                            env=rq_cli_env(), text=True)
    try:
        rows = [json.loads(proc.stdout.readline())]
        q = WorkQueue(r, "q")
        q.push([b"{}"] * 40)
        q.complete([i.id for i in q.lease(10)])
        # (a tick may fall between the push and the complete: each row's rates are its own
        # interval's, so every pair of rows is checked, not the first and the last)
        while rows[-1]["counters"].get("completed", 0) < 10:
            rows.append(json.loads(proc.stdout.readline()))
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0  # Ctrl-C ends a piped watch cleanly too

    def grew(a, b, counter):
        return b["counters"].get(counter, 0) - a["counters"].get(counter, 0)

    assert grew(rows[0], rows[-1], "pushed") == 40 and grew(rows[0], rows[-1], "completed") == 10
    for a, b in itertools.pairwise(rows):
        seconds = b["at"] - a["at"]
        for counter in ("pushed", "completed", "failed"):
            assert b["rates"][counter] == pytest.approx(grew(a, b, counter) / seconds,
                                                        rel=0.2, abs=1e-6), (counter, a, b)
    assert rows[-1]["rates"]["completed"] > 0


def test_watch_json_error_row_when_the_server_is_gone(cli, make_server):
    server = make_server()
    url = server.url
    server.stop()
    run = cli("stats", "q", "--watch", "--interval", "0.1", "--iterations", "2", url=url)
    assert run.exit_code == 0
    rows = run.json
    assert len(rows) == 2
    assert all(row["queue"] == "q" and "cannot connect" in row["error"] for row in rows)
    assert "pending" not in rows[0]


def test_rates_of_a_counter_that_was_reset():
    assert rates({"pushed": 100}, {"pushed": 10}, 2.0, ["pushed"]) == {"pushed": 5.0}
    assert rates({}, {"pushed": 10, "dead": 4}, 2.0) == {"pushed": 5.0, "completed": 0.0,
                                                         "failed": 0.0, "dead": 2.0}


def test_watch_refuses_check_and_prometheus_together(cli):
    run = cli("stats", "q", "--watch", "--check", "--max-pending", "1")
    assert run.exit_code == 2 and "one at a time" in run.stderr
    run = cli("stats", "q", "--watch", "--format", "prometheus")
    assert run.exit_code == 2


def test_error_rows_never_show_the_password(cli, make_server):
    server = make_server()
    url = f"redis://ann:s3cret-pw@127.0.0.1:{server.port}/0"
    server.stop()
    run = cli("stats", "q", "--watch", "--iterations", "1", url=url)
    assert "s3cret-pw" not in run.stdout + run.stderr
    assert "redis://ann:***@127.0.0.1" in run.one["error"]
    run = cli("stats", "q", "--format", "prometheus", url=url)
    assert "s3cret-pw" not in run.stdout + run.stderr and "***" in run.stderr


# -- a screen too small for every queue ------------------------------------------------
def _frame(rows, width=80, height=24):
    from rich.console import Console

    from rq_cli.cli.watch import dashboard

    with open(os.devnull, "w") as devnull:
        console = Console(width=width, height=height, record=True, file=devnull)
        console.print(dashboard(rows, 2.0, width=width, height=height))
    return [line.rstrip() for line in console.export_text().splitlines()]


def _row(name, pending, **extra):
    return {"queue": name, "pending": pending, "leased": 0, "abandoned": 0, "delayed": 0,
            "dead": 0, "oldest_pending_age_s": 1.0, "paused": False, "rates": None, **extra}


def test_dashboard_says_how_many_rows_it_cannot_show_and_keeps_errors_in_view():
    rows = [_row(f"queue-{n:02d}", n, paused=n == 3) for n in range(40)]
    rows += [{"queue": "far-1", "error": "cannot connect to redis://10.0.0.9:6379/0: refused"},
             {"queue": "far-2", "error": "cannot connect to redis://10.0.0.9:6379/0: refused"}]
    lines = _frame(rows)
    assert len(lines) <= 23  # fits the screen, a line kept for the cursor
    table = [line for line in lines if line.startswith(("queue-", "far-"))
             and not line.split()[0].endswith((",", ":"))]
    shown = [line.split()[0] for line in table]
    assert "far-1" in shown and "far-2" in shown  # errors are never cut
    assert [line.split()[1] for line in table if line.startswith("far-")] == ["error", "error"]
    more = [line for line in lines if "more queues" in line]
    assert more == [f"… {42 - len(shown)} more queues (--sort orders them; a taller terminal "
                    f"shows more)"]
    assert "far-1, far-2: cannot connect to redis://10.0.0.9:6379/0: refused" in lines
    assert "paused: queue-03" in lines
    for line in lines:  # the rows drawn hold their values
        words = line.split()
        if words and words[0].startswith("queue-"):
            assert words[1] == str(int(words[0][-2:]))


def test_dashboard_of_rows_that_fit_has_no_more_line():
    lines = _frame([_row("a", 1), _row("b", 2)], width=200, height=50)
    assert not any("more queue" in line for line in lines)
    assert HEADERS in [" ".join(line.split()) for line in lines]


def test_sort_rows_puts_errors_first_then_the_largest():
    from rq_cli.ops.polling import sort_rows

    rows = [_row("b", 1), _row("a", 5), {"queue": "c", "error": "x"}, _row("d", 3)]
    assert [r["queue"] for r in sort_rows(rows, "pending")] == ["c", "a", "d", "b"]
    assert [r["queue"] for r in sort_rows(rows, "name")] == ["a", "b", "c", "d"]
    assert [r["queue"] for r in sort_rows(rows, "errors")] == ["c", "b", "a", "d"]
    assert sort_rows(rows, "given") == rows


def test_watch_on_a_small_terminal_shows_n_more_and_sorts(terminal, server_url, r):
    names = [f"q{n:02d}" for n in range(30)]
    for n, name in enumerate(names):
        WorkQueue(r, name).push([b"{}"] * (n + 1))
    WorkQueue(r, "q29").pause()
    t = terminal("--url", server_url, "stats", *names, "--watch", "--interval", "0.3",
                 "--sort", "pending")
    text = t.wait_for(lambda text: "more queues" in text and "paused: q29" in text)
    rows = [line.split() for line in t.lines if line.startswith("q") and line[1].isdigit()]
    assert rows[0][:2] == ["q29", "30"] and rows[1][:2] == ["q28", "29"]  # largest first
    hidden = int(text.split("… ")[1].split()[0])
    assert hidden == 30 - len(rows) and hidden > 0
    assert t.scrolled_off == 0
    os.write(t.master, b"\x03")
    assert t.proc.wait(timeout=10) == 0


def test_stats_sort_orders_the_table_and_json(cli):
    cli("push", "a", "1")
    cli("push", "b", "1", "2", "3")
    run = cli("stats", "a", "b", "--sort", "pending")
    assert [row["queue"] for row in run.json] == ["b", "a"]
    table = cli("stats", "a", "b", "--sort", "name", tty=True, width=80)
    assert [line.split()[:2] for line in table.stdout.splitlines()[2:4]] == [["a", "1"],
                                                                            ["b", "3"]]
    refused = cli("stats", "a", "--sort", "pending", "--format", "prometheus")
    assert refused.exit_code == 2 and "--sort" in refused.stderr
