"""Every JSON line every command prints validates against its schema (rq_cli/schemas/).

The commands run against a real server with real data, in every state that changes the shape
of a line; each test counts the lines it validated (zero lines would check nothing). The
schema files themselves are checked against the Draft 2020-12 meta-schema, every command that
prints JSON must have one, and the JSON examples of the README and the manual (docs/) must
validate too.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from jsonschema import Draft202012Validator
from waiting import wait_for

from rq_cli.output.shapes import SCHEMAS, schema

pytest_plugins = ["cli_helpers"]  # the cli(...) fixture

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_DIR = ROOT / "rq_cli" / "schemas"
#: commands that print no JSON at all (help, completion), by name as typed
NO_JSON = {"help", "dash", "web"}  # dash: a terminal console (it refuses to run without
# one); web: a web server (HTML pages, its log lines on stderr)


def validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(schema(SCHEMAS[name]),
                                format_checker=Draft202012Validator.FORMAT_CHECKER)


class Checked:
    """Lines validated so far, per command."""

    def __init__(self) -> None:
        self.count: Counter[str] = Counter()

    def __call__(self, command: str, run: Any, *, stream: str = "stdout",
                 codes: tuple[int, ...] = (0,), at_least: int = 1) -> list[dict[str, Any]]:
        """Validate every line ``run`` printed on ``stream`` against ``command``'s schema."""
        assert run.exit_code in codes, run
        text = getattr(run, stream)
        lines = [line for line in text.splitlines() if line.startswith("{")] \
            if stream == "stderr" else [line for line in text.splitlines() if line]
        rows = [json.loads(line) for line in lines]
        assert len(rows) >= at_least, (command, run)
        self.count[command] += len(rows)
        check = validator(command)
        for row in rows:
            errors = sorted(check.iter_errors(row), key=lambda e: list(e.path))
            assert not errors, f"{command}: {row}\n" + "\n".join(
                f"  {list(e.path)}: {e.message}" for e in errors)
        return rows


@pytest.fixture
def checked() -> Checked:
    return Checked()


# -- the schema files --------------------------------------------------------------------------


def schema_files() -> list[Path]:
    return sorted(SCHEMA_DIR.glob("*.schema.json"))


@pytest.mark.parametrize("path", schema_files(), ids=lambda p: p.name)
def test_each_schema_is_a_valid_draft_2020_12_schema_with_a_versioned_id(path: Path) -> None:
    loaded = json.loads(path.read_text())
    Draft202012Validator.check_schema(loaded)  # against the 2020-12 meta-schema
    assert loaded["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    name = path.name.removesuffix(".schema.json")
    assert re.fullmatch(rf"urn:rq-cli:schema:{re.escape(name)}:v[1-9][0-9]*", loaded["$id"])
    assert loaded["title"] and loaded["description"]


def test_every_schema_file_is_used_and_every_used_one_exists() -> None:
    assert sorted(p.name.removesuffix(".schema.json") for p in schema_files()) \
        == sorted(set(SCHEMAS.values()))


def _commands() -> Iterator[str]:
    """Every command of the app, by name as typed (``config show``)."""
    import typer

    from rq_cli.cli import app
    from rq_cli.cli.root import build_command

    group = typer.main.get_command(app)
    for name in group.list_commands(None):  # type: ignore[attr-defined]
        command = build_command(name)
        subs = getattr(command, "commands", None)
        if subs:
            yield from (f"{name} {sub}" for sub in subs)
        else:
            yield name


def test_every_command_has_a_schema() -> None:
    """A command prints JSON (its --json flag, or a log) or is one of NO_JSON."""
    commands = set(_commands())
    assert commands, "no commands found in the app"
    missing = sorted(commands - set(SCHEMAS) - NO_JSON)
    assert not missing, f"commands without a schema in rq_cli.output.shapes.SCHEMAS: {missing}"
    assert not set(SCHEMAS) - commands, "schemas for commands that do not exist"


def test_every_command_with_a_schema_is_run_by_these_tests() -> None:
    """Each command of SCHEMAS is validated by a ``checked("<command>", ...)`` call below (a
    count per test asserts that the call validated lines)."""
    run = set(re.findall(r'checked\("([a-z -]+)"', Path(__file__).read_text()))
    assert set(SCHEMAS) <= run, sorted(set(SCHEMAS) - run)


def test_the_schemas_are_closed_and_complete(cli: Any) -> None:
    """An undocumented field, or a counter left out, is a failure (the issue's examples)."""
    assert cli("push", "q", "{}").exit_code == 0
    row = cli("stats", "q").one
    assert row["counters"]["failed"] == 0  # every counter, 0 when zero
    check = validator("stats")
    assert check.is_valid(row)
    assert not check.is_valid({**row, "by_tenant": {"": 1}})
    assert not check.is_valid({**row, "other_generation": None})
    assert not check.is_valid({**row, "counters": {**row["counters"], "extra": 1}})
    del row["counters"]["failed"]
    assert not check.is_valid(row)


def test_stats_counters_are_every_counter_and_nothing_else(r: redis.Redis) -> None:
    from rq_cli.core.contract.keys import COUNTER_FIELDS, DEDUP_WINDOW_FIELD
    from rq_cli.core.queue import WorkQueue

    assert WorkQueue(r, "q").stats().counters == dict.fromkeys(COUNTER_FIELDS, 0)
    r.hset("q:counters", mapping={"pushed": 3, DEDUP_WINDOW_FIELD: 60000, "peer_field": 9})
    assert WorkQueue(r, "q").stats().counters == {**dict.fromkeys(COUNTER_FIELDS, 0),
                                                  "pushed": 3}


def enum_at(name: str, *path: str) -> list[str]:
    """The ``enum`` of schema ``name`` at ``path`` (keys from the schema's root)."""
    node: Any = json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text())
    for key in path:
        node = node[key]
    return list(node["enum"])


def test_the_schemas_enums_are_the_words_of_codes_py() -> None:
    # each word said once (rq_cli/core/codes.py): the schemas list the same words, in order
    from rq_cli.core import codes

    states = list(codes.STATES)
    assert enum_at("peek", "properties", "state") == states
    for name in ("purge", "requeue-dead"):
        for part in ("moved", "filtered"):
            assert enum_at(name, "$defs", part, "properties", "state") == states
    assert enum_at("peek", "properties", "dead_reason") == list(codes.DEAD_REASONS)
    by_commands = [o.value for o in codes.Outcome  # what complete, fail, extend, cancel say
                   if any(o in codes.SCRIPT_OUTCOMES[s]
                          for s in ("complete", "fail", "extend", "cancel"))]
    assert sorted(enum_at("outcome", "properties", "outcome")) == sorted(by_commands)
    worker_own = {"cancelled", "retaken", "timeout"}  # the worker's words for its items
    for part in ("item", "note"):
        logged = set(enum_at("work-log", "$defs", part, "properties", "outcome"))
        assert logged - worker_own <= {o.value for o in codes.Outcome}, part
    push = enum_at("push", "$defs", "result", "properties", "reason")
    assert push == [f for f in codes.PUSH_FLAGS if f != "added"]


# -- the commands' output ----------------------------------------------------------------------


def test_items_from_push_to_complete(cli: Any, checked: Checked, r: redis.Redis) -> None:
    checked("push", cli("push", "q", '{"n":1}', "[2]"), at_least=2)
    checked("push", cli("push", "q", "--raw", "plain text"))
    checked("push", cli("push", "q", "--id", "c", "{}"), codes=(0, 3))  # a duplicate
    checked("push", cli("push", "q", "-", "--summary", input="1\n2\n{}\n"))
    checked("push", cli("push", "q", "-", "--with-ids",
                        input='{"id":"b64","data_b64":"/w=="}\n{"id":"t1","data":1,'
                              '"tenant":"acme"}\n{"id":"ghost","data":0}\n'), at_least=3)
    r.delete("q:item:ghost")  # an id whose data is gone: "data": null
    checked("stats", cli("stats", "q"))
    checked("stats", cli("stats", "q", "--by-tenant"), at_least=2)
    shown = checked("peek", cli("peek", "q", "-n", "20"), at_least=9)
    assert {"data_b64", "raw", "tenant"} <= {key for row in shown for key in row}
    assert any(row["data"] is None for row in shown if "data" in row)
    leased = checked("lease", cli("lease", "q", "-n", "2"), at_least=2)
    checked("peek", cli("peek", "q", "--state", "processing"), at_least=2)
    checked("holders", cli("holders", "q", "--ids"))
    checked("extend", cli("extend", "q", leased[0]["id"], "--lease", "60"))
    checked("fail", cli("fail", "q", leased[0]["id"], "--error", "boom", "--retry-in", "600"))
    checked("errors", cli("errors", "q"))
    assert cli("pause", "q").exit_code == 0 and cli("resume", "q").exit_code == 0
    r.rpush("q:audit", "not json")  # another client's entry: {"unreadable": ...}
    checked("audit", cli("audit", "q"), at_least=3)
    assert cli("clean", "q").exit_code == 0  # (the history's first snapshot)
    checked("stats", cli("stats", "q", "--history"))
    checked("complete", cli("complete", "q", leased[1]["id"], "nope"), codes=(3,), at_least=2)
    checked("peek", cli("peek", "q", "--state", "delayed"))
    checked("lease", cli("lease", "q", "--at-most-once"))
    checked("stats", cli("stats", "q", "nosuch", "--sort", "pending"), at_least=2)
    # a lease run out: abandoned, in peek and holders
    short = checked("lease", cli("lease", "q", "--lease", "0.05"))[0]["id"]
    wait_for(lambda: cli("peek", "q", "--id", short).one.get("abandoned"))
    checked("peek", cli("peek", "q", "--id", short))
    checked("holders", cli("holders", "q"))
    checked("stats", cli("stats", "q"))
    # a server that cannot be read: error rows
    down = "redis://127.0.0.1:1"
    checked("stats", cli("stats", "q", url=down), codes=(69,))
    checked("stats", cli("stats", "q", "--check", "--max-pending", "0", url=down), codes=(6,))
    checked("stats", cli("stats", "q", "--watch", "--iterations", "1", url=down))
    checked("queues", cli("queues", url=down), codes=(69,))
    checked("clean", cli("clean", "q", url=down), codes=(69,))
    assert checked.count["push"] >= 6 and checked.count["stats"] >= 3


def test_dead_letters_requeue_and_purge(cli: Any, checked: Checked) -> None:
    checked("push", cli("push", "q", "-", "--with-ids", input='{"id":"x","data":{"user":'
                        '"u-7"}}\n{"id":"y","data":2}\n{"id":"z","data":3}\n'), at_least=3)
    leased = [row["id"] for row in cli("lease", "q", "-n", "3").json]
    assert len(leased) == 3
    checked("fail", cli("fail", "q", *leased, "--dead", "--error", "bad"), at_least=3)
    checked("peek", cli("peek", "q", "--state", "dead", "--match", "user == 'u-7'"))
    checked("peek", cli("peek", "q", "--id", "x"))
    checked("peek", cli("peek", "q", "--state", "all"), at_least=3)
    checked("requeue-dead", cli("requeue-dead", "q", "x", "--dry-run"))
    checked("requeue-dead", cli("requeue-dead", "q", "x"))
    checked("requeue-dead", cli("requeue-dead", "q", "--error", "bad"), at_least=2)
    checked("purge", cli("purge", "q", "--state", "pending", "--match", "true", "--dry-run",
                         "--yes"))
    checked("purge", cli("purge", "q", "--state", "pending", "--match", "user == 'u-7'",
                         "--yes"))  # a line per item purged
    checked("purge", cli("purge", "q", "--dry-run", "--yes"))
    checked("purge", cli("purge", "q", "--state", "all", "--yes"))
    checked("clean", cli("clean", "q", "--grace", "0"))
    checked("clean", cli("clean", "q", "--deep", "--dry-run", "--grace", "0"))
    assert checked.count["purge"] >= 3


def test_pause_resume_queues_dedup_and_config(cli: Any, checked: Checked, tmp_path: Path,
                                              server_url: str) -> None:
    checked("push", cli("push", "q", "--dedup-window", "600", "--id", "d", "{}"))
    assert cli("complete", "q", *[r["id"] for r in cli("lease", "q").json]).exit_code == 0
    checked("dedup", cli("dedup", "q"))
    checked("dedup", cli("dedup", "q", "--clear", "d"))
    checked("pause", cli("pause", "q"))
    checked("limit", cli("limit", "q", "--rate", "20/s", "--max-in-flight", "3"))
    checked("limit", cli("limit", "q", "--clear"))
    checked("stats", cli("stats", "q"))
    checked("resume", cli("resume", "q"))
    checked("reshard", cli("reshard", "sharded", "2", "--dry-run", "--create"))
    checked("reshard", cli("reshard", "sharded", "2", "--create"))
    (tmp_path / "rq-cli.toml").write_text(
        f'url = "{server_url}"\n[queues.jobs]\nprefix = "jobs"\nmax_attempts = 3\n'
        '[queues.fair]\ntenant_weights = { acme = 2 }\n')
    checked("queues", cli("queues", url=None), at_least=2)
    checked("config show", cli("config", "show", url=None))
    checked("config path", cli("config", "path", "--json", url=None))
    checked("config path", cli("--no-config", "config", "path", "--json"), codes=(3,))
    checked("doctor", cli("doctor", "q"), codes=(0, 5, 7), at_least=1)


def test_stats_watch_lines_and_check(cli: Any, checked: Checked) -> None:
    checked("push", cli("push", "q", "{}"))
    rows = checked("stats", cli("stats", "q", "nosuch", "--watch", "--interval", "0.1",
                                "--iterations", "2"), at_least=4)
    assert {"at", "rates"} <= set(rows[0])
    checked("stats", cli("stats", "q", "--check", "--max-pending", "0"), codes=(5,))


def test_server_status_and_stop(cli: Any, checked: Checked, tmp_path_factory: Any) -> None:
    from rq_cli.connection import embedded

    directory = tmp_path_factory.mktemp("emb")
    try:
        checked("server status", cli("server", "status", str(directory)), codes=(3,))
        assert cli("push", "q", "{}", url=f"embedded:{directory}").exit_code == 0
        checked("server status", cli("server", "status", url=f"embedded:{directory}"))
        checked("server stop", cli("server", "stop", str(directory)))
    finally:
        embedded.stop(directory)


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("RQ_CLI_", "REDIS_URL"))}


def test_batch_and_wait_lines(cli: Any, checked: Checked, r: redis.Redis) -> None:
    from rq_cli.core.queue import WorkQueue

    assert cli("push", "q", "--batch", "b", "1", "2").exit_code == 0
    checked("batch", cli("batch", "q", "b"))
    checked("wait", cli("wait", "q", "b", "--timeout", "0.1"), codes=(75,))
    q = WorkQueue(r, "q")
    q.complete(q.lease(1))
    q.fail(q.lease(1), error="x", dead=True)
    checked("wait", cli("wait", "q", "b"), codes=(5,))
    checked("batch", cli("batch", "q", "b", "--json"))
    cli("push", "q", "--batch", "c", "1", "2")
    leased = [x["id"] for x in cli("lease", "q", "-n", "2").json]
    cli("complete", "q", leased[0], "--result", '{"a": [1]}')
    cli("complete", "q", leased[1], "--result", '"text"')
    checked("results", cli("results", "q", "c"), at_least=2)


def test_work_log_lines_and_cancel(cli: Any, checked: Checked, server_url: str,
                                   r: redis.Redis) -> None:
    checked("push", cli("push", "q", "-", "--with-ids", input='{"id":"ok","data":0}\n'
                        '{"id":"soft","data":1}\n{"id":"hard","data":2}\n'), at_least=3)
    # the command's own stderr shares the log's stream: each line is an event of the log
    script = ('read d; echo "note for $RQ_ITEM_ID" >&2; printf "no newline" >&2; '
              'case "$RQ_ITEM_ID" in ok) exit 0;; soft) exit 1;; *) exit 100;; esac')
    proc = subprocess.run(
        [sys.executable, "-m", "rq_cli", "--no-config", "--url", server_url, "work", "q",
         "--max-items", "3", "--json", "--", "sh", "-c", script],
        capture_output=True, text=True, timeout=60, env=_env())
    assert proc.returncode == 0, proc.stderr

    class Proc:
        exit_code = 0
        stderr = proc.stderr

    rows = checked("work", Proc(), stream="stderr", at_least=3)
    assert {row.get("outcome") for row in rows} >= {"completed", "retried"}
    said = sorted((row["id"], row["line"]) for row in rows if row.get("event") == "stderr")
    assert said == sorted([(i, f"note for {i}") for i in ("ok", "soft", "hard")]
                          + [(i, "no newline") for i in ("ok", "soft", "hard")])
    checked("push", cli("push", "q", "--id", "c1", "{}"))
    # (exit 3: "nope" is named and not there; c1 is still cancelled: README "Exit codes")
    checked("cancel", cli("cancel", "q", "c1", "nope", "--error", "stop"), codes=(3,))


# -- the examples of the README and the manual ------------------------------------------------

_GLOBAL = {"--url": 1, "--config": 1, "--no-config": 0, "--prefix": 0, "--json": 0}


def _command_of(shell: str) -> str | None:
    """The command whose output follows ``$ ...`` in an example: the last rq-cli of a pipe."""
    words = shell.split("rq-cli ")[-1].split() if "rq-cli " in shell else []
    while words and words[0] in _GLOBAL:
        words = words[1 + _GLOBAL[words[0]]:]
    if not words or "--raw" in words:  # (--raw: bare payloads, no JSON)
        return None
    two = " ".join(words[:2])
    return two if two in SCHEMAS else words[0]


def readme_examples() -> list[tuple[str, str, str]]:
    """(file:line, command, JSON line) for each JSON line printed in an example of the README
    or of a page of the manual (docs/)."""
    found, block, command = [], False, None
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    for path in files:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if line.startswith("```"):
                block, command = not block, None
            elif block and line.startswith("$ "):
                command = _command_of(line)
            elif block and line.startswith("{") and command is not None:
                found.append((f"{path.relative_to(ROOT)}:{number}", command, line))
    return found


def test_the_readme_shows_json_examples_of_most_commands() -> None:
    shown = {command for _, command, _ in readme_examples()}
    assert len(readme_examples()) >= 40
    assert shown >= {"push", "lease", "complete", "fail", "extend", "stats", "peek", "holders",
                     "clean", "requeue-dead", "purge", "dedup", "pause", "resume", "queues",
                     "doctor", "config show", "server status", "server stop", "work", "cancel"}


@pytest.mark.parametrize(("number", "command", "line"), readme_examples(),
                         ids=lambda v: v if isinstance(v, str) and ".md:" in v else None)
def test_each_readme_json_example_validates(number: str, command: str, line: str) -> None:
    row = json.loads(line)
    errors = [f"{list(e.path)}: {e.message}" for e in validator(command).iter_errors(row)]
    assert not errors, f"{number} ({command}): {errors}"


def _work(url: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "rq_cli", "--no-config", "--url", url,
                             "work", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=_env())


def test_work_event_lines(cli: Any, checked: Checked, server_url: str,
                          tmp_path: Path) -> None:
    """Signals (draining, stopping, returned items) and a restart that takes items back."""
    checked("push", cli("push", "q", "-", "--with-ids", input='{"id":"i0","data":0}\n'
                        '{"id":"i1","data":1}\n'), at_least=2)
    marks = tmp_path / "marks"
    marks.mkdir()
    proc = _work(server_url, "q", "--concurrency", "2", "--grace", "0.5", "--name", "w1",
                 "--", "sh", "-c", f"touch {marks}/$RQ_ITEM_ID; sleep 30")
    try:  # (a bound against a hang, generous: CI's two lanes load 2 cores; 10 s ran out once)
        wait_for(lambda: len(list(marks.iterdir())) == 2 or proc.poll() is not None, 60)
    finally:
        if len(list(marks.iterdir())) != 2:
            proc.kill()
            raise AssertionError(f"the worker ran {sorted(p.name for p in marks.iterdir())}: "
                                 f"{proc.communicate(timeout=30)}")
    proc.send_signal(signal.SIGINT)
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)

    class Done:
        exit_code = proc.returncode
        stderr = err

    rows = checked("work", Done(), stream="stderr", at_least=5)
    assert {row.get("event") for row in rows} >= {"draining", "stopping", "exit"}
    assert {row.get("outcome") for row in rows} >= {"returned"}
    # killed holding an item: the restart with the same --name takes it back (reclaimed)
    first = _work(server_url, "q", "--name", "w2", "--lease", "300", "--", "sh", "-c",
                  f"touch {marks}/again-$RQ_ITEM_ID; exec sleep 30")
    wait_for(lambda: list(marks.glob("again-*")), 60)  # (as above: a bound against a hang)
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=10)
    again = subprocess.run([sys.executable, "-m", "rq_cli", "--no-config", "--url", server_url,
                            "work", "q", "--name", "w2", "--idle-exit", "0.3", "--", "true"],
                           capture_output=True, text=True, timeout=60, env=_env())

    class Again:
        exit_code = again.returncode
        stderr = again.stderr

    rows = checked("work", Again(), stream="stderr", at_least=3)
    assert "reclaimed" in {row.get("event") for row in rows}
