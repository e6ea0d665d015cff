"""Exit codes: the same mistake, the same code (issue 19), against a real server.

The rule for "nothing to do" (the manual's "Exit codes"): exit 3 when something the user NAMED is
not there (an id given as an argument or on stdin, a queue to pause, lease asking for an
item); selecting by a rule (--all, --limit, --older-than, a filter, a --state, clean, purge)
that matches nothing is success: exit 0 with zero counts.
"""

from __future__ import annotations

import re

import pytest
from cli_helpers import write_config

from rq_cli.core.queue import WorkQueue

pytest_plugins = ["cli_helpers"]  # the cli(...) fixture


def kill(cli, *ids: str, prefix: str = "q") -> None:
    for item_id in ids:
        cli("push", prefix, "--id", item_id, "{}")
    cli("lease", prefix, "--count", str(len(ids)))
    cli("fail", prefix, *ids, "--dead")


# -- 1. a bad URL in the config: 78, naming the file and line, for every command ---------
@pytest.mark.parametrize("args", [("stats", "x"), ("stats",), ("queues",), ("clean", "--all"),
                                  ("push", "a", "{}"), ("pause", "a"), ("doctor",),
                                  ("stats", "--check"), ("stats", "--format", "prometheus"),
                                  ("holders", "a"), ("work", "a", "--", "true")])
@pytest.mark.parametrize("text,line", [('url = "foo://x"\n[queues.a]\nprefix = "a"\n', 1),
                                       ('[queues.a]\nprefix = "a"\nurl = "foo://x"\n', 3)])
def test_bad_config_url_is_78_with_file_and_line(cli, tmp_path, args, text, line):
    if args == ("stats", "x") and line == 3:
        pytest.skip("x is not a configured queue: the bad url is not its server")
    path = write_config(tmp_path, text)
    run = cli(*args, url=None)
    assert run.exit_code == 78, run
    assert f"{path} line {line}: url in" in run.stderr
    assert run.stderr.count("\n") == 1 and run.stdout == ""


# -- 2. empty names and flags: 2 -------------------------------------------------------------
def test_empty_queue_name_is_usage(cli, r):
    run = cli("push", "", "{}")
    assert run.exit_code == 2 and "queue name cannot be empty" in run.stderr
    assert r.dbsize() == 0


@pytest.mark.parametrize("flag", ["--url", "--config"])
def test_empty_url_or_config_flag_is_refused(cli, flag, r):
    run = cli(flag, "", "push", "q", "{}", url=None)
    assert run.exit_code == 2, run
    assert run.stderr == f"rq-cli: {flag} cannot be empty (leave it out for the default)\n"
    assert r.dbsize() == 0


# -- 3. nothing to do: one rule ----------------------------------------------------------
@pytest.mark.parametrize("mode", [("--all",), ("--older-than", "0"), ("--limit", "5"),
                                  ("--match", "true"), ("--error", "x")])
def test_requeue_dead_by_rule_with_nothing_is_0(cli, mode):
    run = cli("requeue-dead", "q", *mode)
    assert run.exit_code == 0, run
    rows = run.json
    assert rows == [] or rows[-1].get("requeued", 0) == 0


def test_requeue_dead_named_id_missing_is_3_even_when_others_moved(cli, r):
    kill(cli, "a")
    run = cli("requeue-dead", "q", "a", "nope")
    assert run.exit_code == 3, run
    assert run.one["requeued"] == 1 and run.one["missing"] == 1
    assert "1 of the 2 ids is not a dead item of q" in run.stderr
    assert WorkQueue(r, "q").stats().pending == 1
    assert cli("requeue-dead", "q", "nope").exit_code == 3


@pytest.mark.parametrize("verb", ["complete", "fail", "extend"])
def test_settle_unknown_id_is_3(cli, verb):
    cli("push", "q", "--id", "a", "{}")
    cli("lease", "q")
    run = cli(verb, "q", "a", "nope")
    assert run.exit_code == 3, run
    assert "1 item ('nope')" in run.stderr


def test_cancel_named_missing_is_3_and_the_rest_done(cli, r):
    cli("push", "q", "--id", "a", "{}")
    run = cli("cancel", "q", "a", "nope")
    assert run.exit_code == 3, run
    assert "1 of the 2 ids is not a live item of q" in run.stderr
    assert WorkQueue(r, "q").stats().dead == 1


def test_dedup_clear_named_missing_is_3(cli):
    run = cli("dedup", "q", "--clear", "nope")
    assert run.exit_code == 3 and "none of the 1 ids is remembered" in run.stderr
    cli("push", "q", "--id", "a", "--dedup-window", "60", "{}")
    cli("lease", "q")
    cli("complete", "q", "a")
    run = cli("dedup", "q", "--clear", "a", "nope")
    assert run.exit_code == 3 and "1 of the 2 ids is not remembered" in run.stderr


@pytest.mark.parametrize("args", [("clean", "q"), ("clean", "--all"),
                                  ("purge", "q", "--yes"), ("purge", "q", "--state", "all",
                                                            "--yes"),
                                  ("purge", "q", "--state", "dead", "--match", "true", "--yes"),
                                  ("peek", "q"), ("stats", "q")])
def test_by_rule_commands_with_nothing_are_0(cli, args):
    run = cli(*args)
    assert run.exit_code == 0, run


def test_lease_with_nothing_is_3(cli):
    assert cli("lease", "q").exit_code == 3


# -- 4. pause of a queue that does not exist ------------------------------------------------
def test_pause_typo_is_refused_unless_create(cli, r):
    run = cli("pause", "emials")
    assert run.exit_code == 3 and "no queue 'emials'" in run.stderr and "--create" in run.stderr
    assert r.dbsize() == 0
    assert cli("pause", "emials", "--create").exit_code == 0
    assert WorkQueue(r, "emials").is_paused()


def test_pause_existing_or_configured_queue(cli, r, tmp_path):
    cli("push", "q", "{}")
    assert cli("pause", "q").exit_code == 0
    write_config(tmp_path, '[queues.fresh]\nprefix = "fresh"\n')
    assert cli("pause", "fresh").exit_code == 0  # the config names it: not a typo
    assert WorkQueue(r, "fresh").is_paused()


# -- 5. WRONGTYPE names the key ---------------------------------------------------------------
@pytest.mark.parametrize("args", [("push", "q", "{}"), ("stats", "q"), ("peek", "q"),
                                  ("lease", "q"), ("clean", "q"), ("requeue-dead", "q", "--all"),
                                  ("purge", "q", "--yes")])
def test_wrong_type_names_the_key(cli, r, args):
    r.set("q:queue", b"not a list")
    run = cli(*args)
    assert run.exit_code == 69, run
    assert "key 'q:queue' on " in run.stderr and "holds a string, not a list" in run.stderr
    assert r.get("q:queue") == b"not a list"


def test_wrong_type_named_by_a_script_check(cli, r):
    r.set("q:dead", b"x")  # a rare key: the writing scripts' own check names it
    run = cli("push", "q", "{}")
    assert run.exit_code == 69 and "key 'q:dead' on " in run.stderr, run


@pytest.mark.parametrize("key", ["q:queue", "q:enqueued"])
def test_wrong_type_refuses_a_bulk_push_and_stores_nothing(cli, r, key):
    """A bulk push stores its batches as transactions (core/pushing/bulk.py): push_commit.lua names
    the key and undoes the batch, as push.lua refuses one."""
    r.set(key, b"not ours")
    run = cli("push", "q", "-", input="".join(f'{{"n": {i}}}\n' for i in range(1500)))
    assert run.exit_code == 69, run
    assert f"key '{key}' on " in run.stderr and "holds a string" in run.stderr, run
    assert "0 items stored" in run.stderr, run
    # (a set: SCAN may return a key twice)
    assert set(r.scan_iter()) == {key.encode()} and r.get(key) == b"not ours"


# -- 6. one line, exact words --------------------------------------------------------------
def test_one_failed_queue_says_no_rest(cli, r):
    r.set("q:queue", b"x")
    run = cli("stats", "q")
    assert run.exit_code == 69
    assert "stats: 1 of 1 failed: " in run.stderr and "the rest" not in run.stderr


def test_one_item_is_singular(cli):
    run = cli("push", "q", "-", input="{}\nnot json\n")
    assert run.exit_code == 65
    assert "push: 1 item stored (1 added, 0 duplicates) before it" in run.stderr


def test_raw_hint_is_given_once(cli):
    run = cli("push", "q", "\udcff")  # a lone surrogate: the bytes of a non-UTF-8 argument
    assert run.exit_code == 65
    run = cli("push", "q", "-", input=b"\xff\n")
    assert run.exit_code == 65 and run.stderr.count("--raw") == 1, run


# -- 7. counts on every failure -------------------------------------------------------------
def test_push_summary_is_printed_before_a_bad_line(cli, r):
    run = cli("push", "q", "--summary", "-", input="{}\n{}\nbad\n")
    assert run.exit_code == 65
    assert run.one["items"] == 2 and run.one["added"] == 2
    assert WorkQueue(r, "q").stats().pending == 2


def test_complete_stdin_bad_line_says_how_many_completed(cli, r):
    cli("push", "q", "{}", "{}")
    leased = cli("lease", "q", "-n", "2").stdout
    run = cli("complete", "q", "-", input=leased + '{"x"\n')
    assert run.exit_code == 65, run
    assert "line 3: " in run.stderr
    assert "complete: 2 items completed before it" in run.stderr
    assert len(run.json) == 2 and WorkQueue(r, "q").stats().processing == 0


def test_push_into_a_closed_pipe_says_how_many_were_stored(server_url, r):
    import subprocess
    import sys

    from test_cli_watch import rq_cli_env

    proc = subprocess.Popen([sys.executable, "-m", "rq_cli", "--url", server_url, "push", "q",
                             "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=rq_cli_env())
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdout.close()  # `| head -0`: the reader is gone before the first line
    _, err = proc.communicate(b"{}\n" * 50_000, timeout=30)
    assert proc.returncode == 141, err
    found = re.search(rb"push: stdout was closed; exactly ([\d,]+) items? stored", err)
    assert found, err
    said = int(found.group(1).replace(b",", b""))
    stored = WorkQueue(r, "q").stats().pending
    assert said == stored and err.count(b"\n") == 1  # (the batches in flight are counted)


def test_interrupted_filtered_requeue_dead_prints_one_line(server_url, r):
    import signal
    import subprocess
    import sys
    import time

    from test_cli_watch import rq_cli_env

    from rq_cli.core.types import NewItem

    wq = WorkQueue(r, "q")
    for start in range(0, 50_000, 10_000):
        wq.push([NewItem(b"{}", id=f"i-{n:06d}") for n in range(start, start + 10_000)])
        wq.fail([item.id for item in wq.lease(count=10_000)], dead=True)
    proc = subprocess.Popen([sys.executable, "-m", "rq_cli", "--url", server_url,
                             "requeue-dead", "q", "--min-attempts", "1", "--rate", "20000"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=rq_cli_env())
    started = time.monotonic()
    while wq.stats().pending == 0:
        assert time.monotonic() - started < 10
        time.sleep(0.005)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == 130, err
    assert err.count(b"\n") == 1 and err.startswith(b"rq-cli: interrupted: requeue-dead q: "), err


# -- 8. a hung server: read-only commands say nothing changed --------------------------------
@pytest.fixture
def hung_url(monkeypatch):
    """A server that accepts connections and never answers (read timeout cut to 0.4 s)."""
    import socket
    import threading

    from rq_cli.cli import common
    from rq_cli.connection import connect

    monkeypatch.setattr(common, "SOCKET_TIMEOUT", 0.3)
    monkeypatch.setattr(connect, "BLOCKING_HEADROOM", 0.1)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    yield f"redis://127.0.0.1:{listener.getsockname()[1]}/0"
    listener.close()
    for conn in held:
        conn.close()


@pytest.mark.parametrize("args", [("stats", "q"), ("peek", "q"), ("holders", "q")])
def test_hung_server_read_only_says_nothing_changed(cli, hung_url, args):
    run = cli(*args, url=hung_url)
    assert run.exit_code == 69, run
    assert "the read timed out" in run.stderr and "nothing was changed" in run.stderr
    assert "outcome" not in run.stderr


def test_hung_server_write_says_outcome_unknown(cli, hung_url):
    run = cli("push", "q", "{}", url=hung_url)
    assert run.exit_code == 69 and "outcome is unknown" in run.stderr, run


# -- 9. password_env: the manual's example as copied; both levels behave the same -------------
def manual_config_example() -> str:
    from pathlib import Path

    section = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text()
    start = section.index("```toml\n") + len("```toml\n")
    return section[start:section.index("```", start)]


def test_manual_config_example_works_as_copied(cli, tmp_path):
    path = write_config(tmp_path, manual_config_example())
    run = cli("config", "show", url=None)
    assert run.exit_code == 0, run
    shown = run.one
    assert shown["path"] == str(path) and shown["queues"]["emails"]["password"] == "(not set)"
    # as the manual says to try it: empty variables, no password
    run = cli("config", "show", url=None,
              env={"REDIS_PASSWORD": "", "EMAILS_REDIS_PASSWORD": ""})
    assert run.exit_code == 0 and run.one["queues"]["emails"]["password"] == "(empty: no password)"


@pytest.mark.parametrize("where", ["top", "queue"])
def test_password_env_unset_or_empty_is_the_same_at_both_levels(cli, tmp_path, server_url, r,
                                                                 where):
    line = 'password_env = "PW"\n'
    text = (line + '[queues.q]\nprefix = "q"\n') if where == "top" else \
        ('[queues.q]\nprefix = "q"\n' + line)
    path = write_config(tmp_path, text)
    env = {"REDIS_URL": server_url}  # the server comes from $REDIS_URL: password_env applies
    run = cli("push", "q", "{}", url=None, env=env)
    assert run.exit_code == 78, run
    assert f"{path} line {1 if where == 'top' else 3}: password_env = 'PW'" in run.stderr
    assert "not set; export PW" in run.stderr and r.dbsize() == 0
    run = cli("push", "q", "{}", url=None, env={**env, "PW": ""})  # empty: no password
    assert run.exit_code == 0, run
    assert WorkQueue(r, "q").stats().pending == 1
    # --url overrides the server, and with it the password
    assert cli("push", "q", "{}").exit_code == 0


# -- 10. embedded: a new, empty server is announced on a terminal ------------------------------
@pytest.fixture
def embedded_dir():
    import shutil
    import tempfile
    from pathlib import Path

    from rq_cli.connection import embedded

    base = Path(tempfile.mkdtemp(prefix="rqx-"))
    directory = base / "data"
    try:
        yield directory
    finally:
        try:
            embedded.stop(directory, timeout=5)
        finally:
            shutil.rmtree(base, ignore_errors=True)


def test_embedded_new_server_is_announced_on_a_terminal(cli, embedded_dir):
    url = f"embedded:{embedded_dir}"
    run = cli("push", "q", "{}", url=url, stderr_tty=True)
    assert run.exit_code == 0, run
    assert f"started a new, empty embedded server in {embedded_dir}" in run.stderr
    assert f"use embedded:{embedded_dir}" in run.stderr and run.stderr.count("\n") == 1
    again = cli("stats", "q", url=url, stderr_tty=True)  # the same server: nothing to say
    assert again.exit_code == 0 and "new, empty" not in again.stderr
    assert again.one["pending"] == 1


def test_embedded_new_server_is_announced_off_a_terminal_too(cli, embedded_dir):
    """From cron (no terminal) a relative ``embedded:`` is a new server in another
    directory: cron mails stderr, so the note goes there whatever the terminal (issue 29)."""
    run = cli("push", "q", "{}", url=f"embedded:{embedded_dir}")
    assert run.exit_code == 0, run
    assert run.stderr.startswith("rq-cli: note: started a new, empty embedded server in "
                                 f"{embedded_dir}") and run.stderr.count("\n") == 1, run
    again = cli("stats", "q", url=f"embedded:{embedded_dir}")
    assert again.exit_code == 0 and again.stderr == "", again


def test_peek_of_a_named_id_missing_is_3(cli):
    run = cli("peek", "q", "--id", "nope")
    assert run.exit_code == 3 and "has no item 'nope'" in run.stderr


# -- 11. dead_at of an expired item is when it expired, not when a lease noticed it ------------
def test_expired_item_dead_at_is_its_expiry(cli, r):
    from rq_cli.core.types import NewItem

    wq = WorkQueue(r, "q")
    t0 = 1_700_000_000_000
    wq.push([NewItem(b"{}", "old")], expire=10, now_ms=t0)
    assert wq.lease(1, now_ms=t0 + 3_600_000) == []  # noticed an hour later: dead-lettered
    assert r.zscore("q:dead", "old") == t0 + 10_000
    row = cli("peek", "q", "--state", "dead").one
    assert row["dead_reason"] == "expired" and row["dead_at"] == (t0 + 10_000) / 1000
