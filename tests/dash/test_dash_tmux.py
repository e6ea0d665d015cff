"""``rq-cli dash`` end to end, as a person runs it: the real command in a real terminal
(tmux), keys sent to it, the screen read back, and the server checked after."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator

import pytest
from dash_helpers import seed

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")


class Tmux:
    def __init__(self, session: str) -> None:
        self.session = session

    def run(self, *args: str) -> str:
        return subprocess.run(["tmux", *args], check=True, capture_output=True,
                              text=True).stdout

    def keys(self, *keys: str, literal: bool = False) -> None:
        self.run("send-keys", "-t", self.session, *(["-l"] if literal else []), "--", *keys)
        time.sleep(0.3)

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", self.session)

    def wait_for(self, check: Callable[[str], bool], what: str, timeout: float = 20) -> str:
        deadline = time.monotonic() + timeout
        while True:
            shown = self.screen()
            if check(shown):
                return shown
            if time.monotonic() > deadline:
                raise AssertionError(f"not on screen after {timeout} s: {what}\n{shown}")
            time.sleep(0.2)


@pytest.fixture
def tmux(tmp_path) -> Iterator[Tmux]:
    session = f"rqdash-{uuid.uuid4().hex[:8]}"
    # its own server socket: nothing of a tmux the user runs is touched
    socket = str(tmp_path / "tmux.sock")
    term = Tmux(session)
    base = term.run

    def run(*args: str) -> str:
        return base("-S", socket, *args)

    term.run = run  # type: ignore[method-assign]
    yield term
    subprocess.run(["tmux", "-S", socket, "kill-server"], capture_output=True)


def test_console_drills_into_dead_items_and_requeues_a_filtered_set(r, server_url, tmux,
                                                                  tmp_path):
    jobs = seed(r, "jobs", dead=12)  # d-000, d-003, d-006, d-009 failed with "timeout"
    seed(r, "mail", pending=2)
    done = tmp_path / "exit"
    command = (f"{sys.executable} -m rq_cli --no-config --url {server_url} dash jobs mail; "
               f"echo $? > {done}; sleep 60")
    tmux.run("new-session", "-d", "-s", tmux.session, "-x", "80", "-y", "24",
             "env", "-u", "RQ_CLI_URL", "-u", "RQ_CLI_CONFIG", "TERM=xterm-256color",
             "sh", "-c", command)
    shown = tmux.wait_for(lambda s: "jobs" in s and "mail" in s and "12" in s,
                          "the overview with both queues")
    assert "rq-cli dash · 2 queues" in shown
    tmux.keys("Enter")
    tmux.keys("4")
    shown = tmux.wait_for(lambda s: "d-000" in s and "dead: 1-12 of 12" in s,
                          "the dead items of jobs")
    tmux.keys("/")
    tmux.keys("--error timeout", literal=True)
    tmux.keys("Enter")
    shown = tmux.wait_for(lambda s: "filter --error timeout" in s and "d-003" in s
                          and "d-001" not in s, "the filtered dead items")
    tmux.keys("A")
    shown = tmux.wait_for(lambda s: "Requeue 4 dead items of jobs" in s, "the question")
    assert "requeue-dead jobs --error timeout" in shown
    assert jobs.stats().dead == 12  # asked, not done
    tmux.keys("y")
    tmux.wait_for(lambda s: "requeued 4 of 4 matched" in s, "what was done")
    s = jobs.stats()
    assert (s.dead, s.pending) == (8, 4)
    assert sorted(i.id for i in jobs.peek("pending", count=10)) == [
        "d-000", "d-003", "d-006", "d-009"]
    assert all(i.error != "timeout" for i in jobs.peek("dead", count=20))
    tmux.keys("q")
    tmux.keys("q")
    deadline = time.monotonic() + 15
    while not done.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert done.read_text().strip() == "0"
    # the terminal is given back: the console's screen is gone, the shell's is there
    assert "rq-cli dash" not in tmux.screen()


def test_read_only_from_the_config_hides_the_actions(r, server_url, tmux, tmp_path):
    jobs = seed(r, "jobs", dead=3)
    config = tmp_path / "rq-cli.toml"
    config.write_text(f'url = "{server_url}"\n[dash]\nread_only = true\n')
    command = f"{sys.executable} -m rq_cli --config {config} dash jobs; sleep 60"
    tmux.run("new-session", "-d", "-s", tmux.session, "-x", "120", "-y", "30",
             "env", "-u", "RQ_CLI_URL", "TERM=xterm-256color", "sh", "-c", command)
    tmux.wait_for(lambda s: "read-only" in s and "jobs" in s, "the overview, read-only")
    tmux.keys("Enter")
    tmux.keys("4")
    shown = tmux.wait_for(lambda s: "d-002" in s, "the dead items")
    assert "Requeue" not in shown and "Purge" not in shown and "read-only" in shown
    tmux.keys("A")
    tmux.keys("X")
    time.sleep(1)
    shown = tmux.screen()
    assert "Requeue 3" not in shown and "Delete" not in shown
    assert jobs.stats().dead == 3
