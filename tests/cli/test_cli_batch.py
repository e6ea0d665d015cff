"""rq-cli push --batch, rq-cli batch, rq-cli wait (docs/batches.md): counts, exit codes,
waking on the finishing step, a SIGKILLed worker, the batches check of issue 39."""

from __future__ import annotations

import json
import os
import signal
import subprocess

from cli_helpers import rq_cli_command
from waiting import wait_for

from rq_cli.core.queue import WorkQueue

pytest_plugins = ["cli_helpers"]  # the cli(...) fixture


def spawn(server_url: str, *args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([*rq_cli_command(), "--no-config", "--url", server_url, *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, **kw)


def test_push_batch_then_batch_shows_the_counts(cli) -> None:
    assert cli("push", "q", "--batch", "b1", "1", "2").exit_code == 0
    run = cli("push", "q", "--batch", "b1", "-", input="".join(f"{i}\n" for i in range(3000)))
    assert run.exit_code == 0, run
    row = cli("batch", "q", "b1").one
    assert {k: row[k] for k in ("queue", "batch", "total", "pending", "done")} == \
        {"queue": "q", "batch": "b1", "total": 3002, "pending": 3002, "done": False}
    assert row["finished_at"] is None and row["created_at"] > 0


def test_batch_of_no_such_batch_exits_3_and_a_bad_name_exits_2(cli, r) -> None:
    run = cli("batch", "q", "nope")
    assert (run.exit_code, run.stdout) == (3, "")
    assert run.stderr.strip() == "rq-cli: no batch 'nope' in q"
    run = cli("wait", "q", "nope", "--timeout", "5")
    assert run.exit_code == 3 and "no batch 'nope'" in run.stderr
    for bad in ("a:b", "queue", " x"):
        run = cli("push", "q", "--batch", bad, "1")
        assert run.exit_code == 2, run
        assert len(run.stderr.strip().splitlines()) == 1
    assert r.keys("*") == []  # nothing stored


def test_wait_exits_0_when_every_item_completed_and_75_on_timeout(cli, r) -> None:
    cli("push", "q", "--batch", "b", "1", "2")
    run = cli("wait", "q", "b", "--timeout", "0.2")
    assert run.exit_code == 75 and run.one["done"] is False
    assert "not done after 0.2 s: 0 of 2" in run.stderr
    q = WorkQueue(r, "q")
    q.complete(q.lease(2))
    run = cli("wait", "q", "b")
    assert run.exit_code == 0, run
    assert (run.one["completed"], run.one["done"]) == (2, True)


def test_wait_is_woken_by_the_finishing_step(cli, r, server_url) -> None:
    """A wait started first returns once the last item completes (the token), long before
    its timeout; the line it prints says so."""
    cli("push", "q", "--batch", "b", "1", "2", "3")
    waiter = spawn(server_url, "wait", "q", "b", "--timeout", "300")
    try:
        q = WorkQueue(r, "q")
        q.complete(q.lease(2))
        assert waiter.poll() is None
        # (it is blocked on the wake key: a client in BLMOVE)
        wait_for(lambda: any(c.get("cmd") == "blmove" for c in r.client_list()))
        q.complete(q.lease(1))
        out, err = waiter.communicate(timeout=60)
    finally:
        if waiter.poll() is None:
            waiter.kill()
    assert waiter.returncode == 0, err
    assert json.loads(out)["completed"] == 3


def test_a_sigkilled_worker_leaves_the_batch_to_finish_exactly_once(cli, r, server_url) -> None:
    cli("push", "q", "--batch", "b", "1", "2")
    # (the job's own argument names it: a SIGKILLed worker leaves its job running, which
    # this test then ends itself, as an operator would)
    job = ["sleep", f"{600 + os.getpid() % 1000 / 1000:.3f}"]
    worker = spawn(server_url, "work", "q", "--lease", "1", "--", *job)
    try:
        wait_for(lambda: cli("batch", "q", "b").one["processing"] >= 1)
    finally:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
        for pid in (int(d) for d in os.listdir("/proc") if d.isdigit()):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if f.read().split(b"\0")[:2] == [w.encode() for w in job]:
                        os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    held = [i.decode() for i in r.lrange("q:processing", 0, -1)]
    # its leases run out (1 s, not extended any more), then clean recovers the items
    wait_for(lambda: not any(r.exists(f"q:lease:{i}") for i in held))
    run = cli("clean", "q", "--grace", "0")
    assert run.exit_code == 0, run
    assert cli("batch", "q", "b").one["processing"] == 0
    done = spawn(server_url, "work", "q", "--idle-exit", "1", "--", "true")
    done.communicate(timeout=120)
    run = cli("wait", "q", "b", "--timeout", "60")
    assert run.exit_code == 0 and run.one["completed"] == 2, run
    assert r.llen("q:batch_wake:b") == 1  # finished once


def test_the_batches_check(cli, r, server_url, tmp_path) -> None:
    """Issue 39's check: 500 items in b1 (10 fail for good), one pushed --after b1; wait,
    started first, exits 5 and says 490 completed and 10 dead; results prints 490 results
    with the job's stdout; batch --json says so too; the --after item runs only after every
    item of b1 has finished."""
    run = cli("push", "q", "--batch", "b1", "-", input="".join(f"{i}\n" for i in range(1, 501)))
    assert run.exit_code == 0, run
    assert cli("push", "q", "--after", "b1", "1001").exit_code == 0
    waiter = spawn(server_url, "wait", "q", "b1", "--timeout", "300")
    done = tmp_path / "done.txt"  # each job appends its number as it ends
    script = f'read x; [ $((x % 50)) -ne 0 ] || exit 100; echo "$x" >> {done}; echo "$x"'
    worker = spawn(server_url, "work", "q", "-c", "4", "--idle-exit", "2", "--result",
                   "stdout", "--", "sh", "-c", script)
    try:
        out, err = waiter.communicate(timeout=300)
        worker.communicate(timeout=120)
    finally:
        for p in (waiter, worker):
            if p.poll() is None:
                p.kill()
    assert waiter.returncode == 5, err
    line = json.loads(out)
    assert (line["completed"], line["dead"], line["done"]) == (490, 10, True)
    assert "10 of 500 items dead" in err.decode()
    row = cli("batch", "q", "b1", "--json").one
    assert (row["total"], row["completed"], row["dead"], row["done"]) == (500, 490, 10, True)
    results = sorted(x["result"] for x in cli("results", "q", "b1").json)
    assert results == [n for n in range(1, 501) if n % 50]
    finished = [int(x) for x in done.read_text().split()]
    assert len(finished) == 491 and finished[-1] == 1001


def test_batch_forget_drops_the_record(cli, r) -> None:
    cli("push", "q", "--batch", "b", "1")
    run = cli("batch", "q", "b", "--forget")
    assert run.exit_code == 0 and "forgot batch 'b'" in run.stderr
    assert cli("batch", "q", "b").exit_code == 3
    assert r.keys("q:batch*") == []


def test_a_batch_of_a_sharded_queue_adds_up_its_parts(cli, r, tmp_path, server_url) -> None:
    """Each shard keeps its part of the batch; batch and wait add the parts up, and the
    batch is done when every part is."""
    from cli_helpers import write_config

    write_config(tmp_path, '[queues.jobs]\nprefix = "jobs"\nshards = 3\n')
    assert cli("reshard", "jobs", "3").exit_code == 0
    lines = "".join(f"{n}\n" for n in range(60))
    assert cli("push", "jobs", "--batch", "b", "-", input=lines).exit_code == 0
    parts = [int(r.hget(f"jobs~1.{i}:batch:b", "total") or 0) for i in range(3)]
    assert sum(parts) == 60 and all(parts), parts  # every shard has a part
    assert r.keys("jobs*:batch:b*") and not r.hget("jobs~1.0:batch:b", "holds")
    row = cli("batch", "jobs", "b").one
    assert (row["total"], row["pending"], row["done"]) == (60, 60, False)
    leased = cli("lease", "jobs", "--count", "59").json
    assert cli("complete", "jobs", *[x["id"] for x in leased]).exit_code == 0
    assert cli("wait", "jobs", "b", "--timeout", "0.1").exit_code == 75
    last = cli("lease", "jobs").one
    assert cli("fail", "jobs", "--dead", last["id"]).exit_code == 0
    run = cli("wait", "jobs", "b", "--timeout", "60")
    assert run.exit_code == 5, run
    assert (run.one["completed"], run.one["dead"], run.one["done"]) == (59, 1, True)


def test_results_of_complete_result_and_of_complete_lines(cli, r) -> None:
    cli("push", "q", "--batch", "b", "1", "2", "3")
    cli("push", "q", "4")  # in no batch: its result is not kept
    leased = {x["data"]: x["id"] for x in cli("lease", "q", "-n", "4").json}
    run = cli("complete", "q", leased[1], "--result", '{"size": 12, "ok": true}')
    assert run.exit_code == 0 and run.one["outcome"] == "completed"
    lines = (f'{{"id": "{leased[2]}", "result": [1, "two"]}}\n'
             f'{{"id": "{leased[3]}"}}\n'
             f'{{"id": "{leased[4]}", "result": "x"}}\n')
    assert cli("complete", "q", "-", input=lines).exit_code == 0
    rows = {x["id"]: x["result"] for x in cli("results", "q", "b").json}
    assert rows == {leased[1]: {"size": 12, "ok": True}, leased[2]: [1, "two"]}
    assert not r.exists("q:results:") and r.keys("q:results:*") == [b"q:results:b"]
    assert cli("batch", "q", "b").one["done"] is True
    assert r.pttl("q:results:b") > 0  # kept for batch_ttl, as the record


def test_complete_result_refusals(cli, r) -> None:
    cli("push", "q", "--batch", "b", "1")
    item = cli("lease", "q").one["id"]
    run = cli("complete", "q", item, "--result", "not json")
    assert run.exit_code == 65 and run.stderr.startswith("rq-cli: --result: ")
    run = cli("complete", "q", item, "--result", '"' + "a" * 70_000 + '"')
    assert run.exit_code == 65 and "at most 65,536" in run.stderr
    assert cli("batch", "q", "b").one["processing"] == 1  # nothing done
    assert cli("results", "q", "nope").exit_code == 3
    assert cli("results", "q", "b").stdout == ""


def test_work_result_stdout_keeps_the_output_bounded(cli, r, server_url) -> None:
    cli("push", "q", "--batch", "b", "1", "2")
    run = spawn(server_url, "work", "q", "--idle-exit", "1", "--result", "stdout", "--json",
                "--", "sh", "-c", 'read x; if [ "$x" = 1 ]; then echo "{\\"n\\": $x}"; '
                'else head -c 70000 /dev/zero | tr "\\0" a; fi')
    _, err = run.communicate(timeout=120)
    logs = [json.loads(x) for x in err.decode().splitlines() if x.startswith("{")]
    cut = [x for x in logs if x.get("result_cut")]
    assert len(cut) == 1 and cut[0]["result_cut"] == 65536, logs
    rows = sorted((x["result"] for x in cli("results", "q", "b").json), key=str)
    assert rows[0] == "a" * 65536 and rows[1] == {"n": 1}


def test_peek_state_dead_batch_shows_what_failed_in_the_batch(cli, r) -> None:
    cli("push", "q", "--batch", "b", "1", "2", "3")
    cli("push", "q", "4")  # in no batch
    leased = {x["data"]: x["id"] for x in cli("lease", "q", "-n", "4").json}
    cli("fail", "q", "--dead", "--error", "bad input", leased[2], leased[4])
    rows = cli("peek", "q", "--state", "dead", "--batch", "b").json
    assert [(x["id"], x["error"]) for x in rows] == [(leased[2], "bad input")]
    assert len(cli("peek", "q", "--state", "processing", "--batch", "b").json) == 2
    assert cli("peek", "q", "--state", "dead", "--batch", "nope").exit_code == 3
    run = cli("peek", "q", "--state", "all", "--batch", "b")
    assert run.exit_code == 2 and len(run.stderr.strip().splitlines()) == 1


def test_wait_with_its_progress_bar_on_a_terminal(cli) -> None:
    """(the bar is drawn on stderr and cleared: what stays is the line and the error)"""
    cli("push", "q", "--batch", "b", "1", "2")
    run = cli("wait", "q", "b", "--timeout", "0.3", stderr_tty=True)
    assert run.exit_code == 75
    assert run.stderr.strip().splitlines()[-1].startswith("rq-cli: wait: batch 'b' of q")
    assert run.one["total"] == 2  # the line on stdout all the same
