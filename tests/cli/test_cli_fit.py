"""Tables on a terminal of 80 and 200 columns: ids, sessions and numbers never
wrap, headers never split, and columns that do not fit are dropped with one note on stderr.

Tables are drawn by the real commands at a fixed width (the ``cli`` fixture's ``width``); each
test checks that the drawn rows really hold the values, not only the headers.
"""

from __future__ import annotations

import os
import re

import pytest
import redis

from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem
from rq_cli.output.render import Output, Terminal
from rq_cli.output.tables import Column, fit_table

pytest_plugins = ["cli_helpers"]

IDS = [f"{n:02d}13810634afc20f6beece2899eea6c{n:02d}"[:32] for n in range(12)]
LONG_QUEUE = "billing-invoices-reconciliation"
NOTE = re.compile(r"^rq-cli: not shown at (\d+) columns: (.+) \(--json prints every field; "
                  r"a wider terminal shows them\)$", re.M)


def rows_of(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines() if line.strip()]


def assert_whole(text: str, *words: str, width: int) -> None:
    """Every word appears whole on one line; no line is wider than the terminal."""
    assert all(len(line) <= width for line in text.splitlines()), text
    tokens = set(text.split())
    for word in words:
        assert word in tokens, f"{word!r} is not whole in:\n{text}"


def push_ids(r: redis.Redis, queue: str, ids: list[str], **kw: object) -> WorkQueue:
    wq = WorkQueue(r, queue)
    wq.push([NewItem(b'{"to": "someone@example.com", "body": "hello there"}', id=i)
             for i in ids], **kw)  # type: ignore[arg-type]
    return wq


@pytest.mark.parametrize("width", [80, 200])
def test_stats_keeps_queue_names_whole_and_tenants_have_values(cli, width) -> None:
    cli("push", LONG_QUEUE, "--tenant", "acme", "{}")
    cli("push", LONG_QUEUE, "--tenant", "globex", "{}")
    cli("push", "q2", "{}")
    run = cli("stats", LONG_QUEUE, "q2", tty=True, width=width)
    assert run.exit_code == 0, run
    assert_whole(run.stdout, LONG_QUEUE, "q2", width=width)
    lines = rows_of(run.stdout)
    header = lines[0].split()
    row = lines[2].split()
    assert row[0] == LONG_QUEUE and len(row) == len(header)  # a value under every header
    if "tenants" in header:
        assert row[header.index("tenants")] == "2"
    else:
        note = NOTE.search(run.stderr)
        assert note and "tenants" in note.group(2) and note.group(1) == str(width)
    assert row[header.index("pending")] == "2"
    if width == 200:  # (no note; the test server keeps nothing on disk: doctor's warning)
        assert [line for line in run.stderr.splitlines()
                if "keeps nothing on disk" not in line] == []


def test_the_dropped_column_note_names_the_columns_once(cli, r) -> None:
    push_ids(r, "q", IDS[:3])
    cli("lease", "q", "-n", "3")
    run = cli("peek", "q", "--state", "processing", tty=True, width=80)
    assert run.exit_code == 0, run
    notes = NOTE.findall(run.stderr)
    assert len(notes) == 1 and notes[0][0] == "80"
    dropped = notes[0][1].split(", ")
    header = rows_of(run.stdout)[0]
    assert all(name not in header for name in dropped)
    assert "held by" in header and "id" in header
    assert_whole(run.stdout, *IDS[:3], width=80)
    sessions = [line.split()[-1] for line in run.stdout.splitlines() if line.startswith("0")]
    assert len(sessions) == 3
    for session in {s for s in re.findall(r"\S+:\d+:\S+", run.stdout)}:
        assert session.count(":") >= 2  # host:pid:random, on one line
    wide = cli("peek", "q", "--state", "processing", tty=True, width=200)
    assert wide.stderr == "" and "enqueued" in rows_of(wide.stdout)[0]
    assert_whole(wide.stdout, *IDS[:3], width=200)


@pytest.mark.parametrize("command", ["purge", "requeue-dead"])
def test_filtered_dry_run_shows_whole_sample_ids(cli, r, command) -> None:
    wq = push_ids(r, "q", IDS[:4])
    if command == "requeue-dead":
        wq.fail([item.id for item in wq.lease(count=4)], dead=True, error="smtp timeout")
        state = "dead"
    else:
        state = "pending"
    args = [command, "q", "--match", "to", "--dry-run"]
    if command == "purge":
        args += ["--state", state]
    for width in (80, 200):
        run = cli(*args, tty=True, width=width)
        assert run.exit_code == 0, run
        assert_whole(run.stdout.replace(",", " "), *IDS[:4], width=width)
        header = rows_of(run.stdout)[0]
        if width == 200:
            assert "dry run" in header  # the header whole, on one line
            assert run.stderr == ""


def test_holders_keeps_sessions_and_ids_whole(cli, r) -> None:
    push_ids(r, "q", IDS[:2])
    leased = cli("lease", "q", "-n", "2").json
    session = leased[0]["session"]
    for width in (80, 200):
        run = cli("holders", "q", "--ids", tty=True, width=width)
        assert run.exit_code == 0, run
        assert_whole(run.stdout.replace(",", " "), session, IDS[0], IDS[1], width=width)


def test_lease_shows_whole_ids_when_there_is_room(cli, r) -> None:
    push_ids(r, "q", IDS[:1])
    run = cli("lease", "q", tty=True, width=200)
    assert run.exit_code == 0, run
    assert_whole(run.stdout, IDS[0], width=200)
    assert run.stderr == ""


def test_dry_run_header_is_whole_at_200_columns(cli) -> None:
    cli("push", "q", "{}")
    run = cli("purge", "q", "--dry-run", tty=True, width=200)
    assert run.exit_code == 0, run
    header = rows_of(run.stdout)[0]
    assert "dry run" in header
    assert rows_of(run.stdout)[2].split()[-1] == "yes"


def test_fit_table_drops_the_least_important_first() -> None:
    columns = [Column("id"), Column("a", drop=1), Column("b", drop=3), Column("c", drop=0)]
    cells = [["x" * 30, "y" * 20, "z" * 20, "w" * 20]]
    layout = fit_table(cells, columns, 80)
    assert [c.key for c in layout.columns] == ["id", "a", "c"]
    assert [c.key for c in layout.dropped] == ["b"]
    assert layout.fits and layout.widths == [30, 20, 20]
    narrow = fit_table(cells, columns, 60)
    assert [c.key for c in narrow.columns] == ["id", "c"]


def test_words_and_data_wrap_but_keep_their_floor() -> None:
    columns = [Column("id"), Column("error", kind="words"), Column("data", kind="data")]
    cells = [["i" * 32, "smtp timeout after " + "w" * 30, "d" * 200]]
    layout = fit_table(cells, columns, 80)
    assert layout.fits and not layout.dropped
    assert layout.widths[0] == 32 and layout.widths[1] >= 30 and layout.widths[2] >= 16
    out = Output(Terminal(stdout=True, width=80))
    assert out.terminal.width == 80


@pytest.mark.parametrize("width", [40, 80, 200])
def test_rows_drawn_without_rich_line_up_with_rich_s_header(width) -> None:
    """Rows are drawn without rich (fast), under rich's header: the columns line up, and a
    row that fits on one line reads exactly as rich draws it."""
    from rich.console import Console

    from rq_cli.output.tables import draw_table, plain_rows

    columns = [Column("id"), Column("data", kind="data"), Column("n", kind="number"),
               Column("error", kind="words")]
    cells = [["i-0001", '{"to": "a@example.com"}', "5", "-"],
             ["i-0002", "x" * 50, "12", "smtp timeout after 30 seconds"]]
    layout = fit_table(cells, columns, width)
    kept = [columns.index(col) for col in layout.columns]
    cells = [[line[n] for n in kept] for line in cells]
    console = Console(width=width, file=open(os.devnull, "w"))  # noqa: SIM115
    with console.capture() as captured:
        console.print(draw_table(cells, layout, None, True))
    rich_lines = [line.rstrip() for line in captured.get().splitlines()]
    plain = plain_rows(cells, layout)
    if plain is None:  # an older rich spaces columns otherwise: rich draws every row then
        one = [["x" * w for w in layout.widths]]
        with console.capture() as captured:
            console.print(draw_table(one, layout, None, False))
        assert captured.get().rstrip("\n").rstrip() != "   ".join(
            "x" * w for w in layout.widths), "plain rows refused where they match rich"
        return
    lines = plain.splitlines()
    header = rich_lines[0]
    for line in lines:
        assert len(line) <= width
    if len(rich_lines) == 4:  # every row on one line: the same text as rich's
        assert lines == rich_lines[2:]
    first = lines[0]
    assert first.startswith("i-0001")
    for col in layout.columns[1:]:  # each column starts under its header
        if col.kind != "number":
            start = header.index(col.title)
            assert first[start - 1] == " " and first[start] != " ", (col, first, header)
    assert plain_rows([["中文", *cells[0][1:]]], layout) is None  # wide: rich draws it
    assert plain_rows([["é…", *cells[0][1:]]], layout) is not None  # one cell each


def test_stats_error_rows_keep_their_reason_at_80_columns(cli, make_server) -> None:
    server = make_server()
    url = server.url
    server.stop()
    run = cli("stats", LONG_QUEUE, "jobs", url=url, tty=True, width=80)
    assert run.exit_code == 69
    assert all(len(line) <= 80 for line in run.stdout.splitlines())
    assert rows_of(run.stdout)[0].split()[-1] == "error"  # the error column is kept
    text = " ".join(run.stdout.split())
    assert f"cannot connect to {url}" in text  # wrapped between words, not cut
    assert_whole(run.stdout, LONG_QUEUE, "jobs", width=80)
    note = NOTE.search(run.stderr)
    assert note is None or "error" not in note.group(2).split(", ")


def test_doctor_at_80_columns_gives_the_fix_in_its_summary(cli) -> None:
    """At 80 columns the table leaves out `detail` and `fix`; the stderr summary gives the
    first problem's fix (the test server keeps nothing on disk: persistence fails)."""
    rows = cli("doctor").json
    fix = next(row["fix"] for row in rows if row["check"] == "persistence")
    run = cli("doctor", tty=True, width=80)
    assert run.exit_code == 5, run
    assert fix and f"; fix: {fix}" in run.stderr, run.stderr


@pytest.mark.parametrize("width", [80, 200])
def test_requeue_dead_dry_run_says_so_at_any_width(cli, r, width) -> None:
    """A dry run's table says "dry run" above it, whatever columns a narrow terminal drops."""
    cli("push", LONG_QUEUE, "--id", "a", "{}")
    cli("lease", LONG_QUEUE)
    cli("fail", LONG_QUEUE, "a", "--dead")
    for args in (["--all"], ["--reason", "failed", "--summary"]):
        run = cli("requeue-dead", LONG_QUEUE, *args, "--to", LONG_QUEUE + "-2", "--dry-run",
                  tty=True, width=width)
        assert run.exit_code == 0, run
        assert rows_of(run.stdout)[0] == "dry run: nothing was requeued", run.stdout
        assert_whole(run.stdout, LONG_QUEUE, width=width)
    assert WorkQueue(r, LONG_QUEUE).stats().dead == 1
    run = cli("requeue-dead", LONG_QUEUE, "--all", tty=True, width=width)
    assert "dry run:" not in run.stdout


def test_push_table_leaves_out_a_reason_no_row_has(cli) -> None:
    """A column no row fills is left out: `reason` when every item was added."""
    run = cli("push", "q", "--id", "a", "{}", tty=True, width=80)
    assert rows_of(run.stdout)[0].split() == ["id", "added"], run.stdout
    run = cli("push", "q", "--id", "a", "{}", tty=True, width=80)
    assert rows_of(run.stdout)[0].split() == ["id", "added", "reason"], run.stdout
