"""Terminal polish and the remaining operator paths, on an 80-column terminal.

Tables are rendered by the real commands with a fixed console width (the ``cli`` fixture's
``width``), as a terminal of that size would show them.
"""

from __future__ import annotations

import redis
from cli_helpers import write_config

from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem

pytest_plugins = ["cli_helpers"]

LONG_ID = "f1213810634afc20f6beece2899eea6c"


def lines_of(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines() if line.strip()]


def test_stats_headers_never_split_at_80_columns(cli) -> None:
    cli("push", "emails", "{}")
    run = cli("stats", "emails", tty=True, width=80)
    assert run.exit_code == 0
    header = lines_of(run.stdout)[0].split()
    assert header == ["queue", "pending", "processing", "leased", "abandoned", "delayed",
                      "due", "dead", "oldest", "paused"]
    assert all(len(line) <= 80 for line in run.stdout.splitlines())
    assert len(lines_of(run.stdout)) == 3  # header, rule, one row: nothing wrapped


def test_ids_are_never_shortened_or_split_columns_are_dropped_instead(cli, r) -> None:
    WorkQueue(r, "q").push([NewItem(b'{"to": "someone@example.com", "body": "hello there, '
                                    b'this is a longer payload"}', id=LONG_ID)], delay=60)
    run = cli("peek", "q", "--state", "delayed", tty=True, width=80)
    assert run.exit_code == 0
    out = run.stdout
    assert all(len(line) <= 80 for line in out.splitlines())
    assert LONG_ID in out.split()  # whole, on one line
    assert "…" not in out
    assert "someone@example.com" in out.replace("\n", "")  or "someone@" in out
    wide = cli("peek", "q", "--state", "delayed", tty=True, width=200)
    assert LONG_ID in wide.stdout.split()


def test_delayed_view_has_an_error_column(cli, r: redis.Redis) -> None:
    cli("push", "q", "--id", "a", "{}")
    cli("lease", "q")
    cli("fail", "q", "a", "--error", "smtp timeout", "--retry-in", "600")
    run = cli("peek", "q", "--state", "delayed", tty=True, width=120)
    assert "error" in lines_of(run.stdout)[0] and "smtp timeout" in run.stdout


def test_complete_table_drops_always_empty_columns(cli) -> None:
    cli("push", "q", "--id", "a", "{}")
    cli("push", "q", "--id", "b", "{}")
    cli("lease", "q", "-n", "2")
    done = cli("complete", "q", "a", tty=True, width=80)
    assert done.exit_code == 0
    assert "retry at" not in done.stdout and "lease until" not in done.stdout
    failed = cli("fail", "q", "b", "--retry-in", "60", tty=True, width=80)
    assert "retry at" in failed.stdout  # a column with a value stays


def test_push_draws_no_progress_over_typed_input(cli) -> None:
    """stdin a terminal (lines being typed): no spinner on stderr, also a terminal."""
    run = cli("push", "q", "-", input=b"{}\n{}\n", stdin_tty=True, stderr_tty=True)
    assert run.exit_code == 0
    assert run.stderr == ""


def test_config_show_says_a_password_in_the_url_is_set_and_hides_it(cli, tmp_path) -> None:
    write_config(tmp_path, '[queues.jobs]\nurl = "redis://:s3cret@127.0.0.1:1/0"\n')
    run = cli("config", "show", url=None)
    shown = run.one
    assert shown["queues"]["jobs"]["password"] == "(hidden, in the url)"
    assert "s3cret" not in run.stdout
    flag = cli("config", "show", url="redis://user:pw@127.0.0.1:1/0")
    assert flag.one["password"] == "(hidden, in the url)" and ":pw@" not in flag.stdout
    table = cli("config", "show", url=None, tty=True, width=200)
    assert "(hidden, in the url)" in table.stdout and "s3cret" not in table.stdout
