"""Issue 11, ``rq-cli work``: the whole command as a user runs it (start-up included), side by
side with its baselines, interleaved, ``reps`` + 2 times (short, noisy measurements).

- ``rq-cli work q --max-items N -- /bin/true`` over N pending items vs a bare shell loop that
  forks the external ``/bin/true`` N times (``bash -c 'for i in $(seq N); do /bin/true
  </dev/null; done'``; the builtin ``true`` would not fork), each run twice per repetition in
  ABBA order. Ratio: the shell's wall time over the worker's (a rate ratio), budget >= 0.7x.
- ``rq-cli work q --concurrency 8 --max-items M -- /bin/sleep 0.05`` vs the ideal, 8 items per
  50 ms. Budget >= 0.8x on the steady rate: the same command over 8 items (start-up, one
  round of commands, exit) is timed in the same repetition, before and after (the shorter
  of the two: noise only adds to it), and the rate is (M - 8) items
  over the difference of the two wall times, so the fixed start-up (0.1-0.5 s on this loaded
  machine, against an ideal of 4 s) is not counted as throughput. The whole command's ratio,
  start-up included, is reported next to it (info).

The worker's log (one JSON line per item) goes to a file, the commands' output to /dev/null.
"""

from __future__ import annotations

import compileall
import shutil
from pathlib import Path
from typing import Any

import rq_cli

from ..fill import fill
from ..harness import CaseResult, Ctx, Row, Run, log, median, run_timed, skipped_row, summary

Q = "wq"
SLEEP = 0.05
CONCURRENCY = 8


def run(ctx: Ctx) -> CaseResult:
    res = CaseResult("work")
    measure_true = "rq-cli work q -- /bin/true / bash loop forking /bin/true"
    measure_conc = f"rq-cli work --concurrency {CONCURRENCY} -- sleep {SLEEP} / ideal (steady)"
    if not ctx.cli:
        res.rows.append(skipped_row("11 work", measure_true, "min", 0.7, ctx.cli_reason))
        res.rows.append(skipped_row("11 work", measure_conc, "min", 0.8, ctx.cli_reason))
        return res
    # as installed: byte-compiled once (with PYTHONDONTWRITEBYTECODE=1 an editable install
    # would recompile changed modules on every run, as the start-up case notes)
    compileall.compile_dir(Path(rq_cli.__file__).parent, quiet=1)
    server = ctx.server
    client = server.client()
    true_bin = shutil.which("true") or "/bin/true"
    sleep_bin = shutil.which("sleep") or "/bin/sleep"
    n = ctx.scale(2_000, 500)
    m = ctx.scale(640, 160)
    ideal = m / CONCURRENCY * SLEEP
    times: dict[str, list[float]] = {"worker true": [], "shell true": [], "worker c8": [],
                                     "worker c8, 8 items": []}
    ratios_true: list[float] = []
    ratios_conc: list[float] = []
    ratios_whole: list[float] = []
    for rep in range(ctx.reps + 2):  # short, noisy measurements: more repetitions
        # ABBA: a drift in the machine's load between the runs weighs on both alike
        order = ["worker", "shell", "shell", "worker"] if rep % 2 == 0 else \
            ["shell", "worker", "worker", "shell"]
        got: dict[str, float] = {"worker": 0.0, "shell": 0.0}
        for who in order:
            if who == "shell":
                r = run_timed(["bash", "-c", f"for i in $(seq {n}); do {true_bin} </dev/null; "
                               f"done"], env=ctx.env, cwd=ctx.work)
            else:
                server.flush()
                fill(client, Q, "pending", n)
                r = run_timed([ctx.cli, "work", Q, "--max-items", str(n), "--", true_bin],
                              env=ctx.env, cwd=ctx.work)
                _check(client, r, n, "work -- true")
            got[who] += r.seconds / 2
        times["worker true"].append(got["worker"])
        times["shell true"].append(got["shell"])
        ratios_true.append(got["shell"] / got["worker"])
        walls: dict[int, float] = {}
        for size in (CONCURRENCY, m, CONCURRENCY):  # the short run's noise only adds: min
            server.flush()
            fill(client, Q, "pending", size)
            r = run_timed([ctx.cli, "work", Q, "--concurrency", str(CONCURRENCY),
                           "--max-items", str(size), "--", sleep_bin, str(SLEEP)],
                          env=ctx.env, cwd=ctx.work)
            _check(client, r, size, "work --concurrency")
            walls[size] = min(walls.get(size, r.seconds), r.seconds)
        times["worker c8"].append(walls[m])
        times["worker c8, 8 items"].append(walls[CONCURRENCY])
        steady = (m - CONCURRENCY) / (walls[m] - walls[CONCURRENCY])
        ratios_conc.append(steady / (CONCURRENCY / SLEEP))
        ratios_whole.append(ideal / walls[m])
        log(f"work rep {rep + 1}: true: worker {n / got['worker']:,.0f} items/s, shell "
            f"{n / got['shell']:,.0f} forks/s ({ratios_true[-1]:.2f}x); concurrency "
            f"{CONCURRENCY}: {steady:,.0f} items/s steady ({ratios_conc[-1]:.2f}x), "
            f"{m / walls[m]:,.0f} items/s whole ({ratios_whole[-1]:.2f}x), ideal "
            f"{CONCURRENCY / SLEEP:,.0f}")
    server.flush()
    client.close()
    res.raw = {"items_true": n, "items_concurrency": m, "true": true_bin, "sleep": sleep_bin,
               "seconds": {k: summary(v) for k, v in times.items()},
               "ratio_true": summary(ratios_true), "ratio_concurrency": summary(ratios_conc),
               "ratio_concurrency_whole": summary(ratios_whole)}
    res.rows.append(Row(
        "11 work", measure_true,
        f"{n / median(times['worker true']):,.0f} items/s",
        f"{n / median(times['shell true']):,.0f} forks/s", ratios_true, "min", 0.7,
        note=f"{n} items, start-up included"))
    steady = (m - CONCURRENCY) / (median(times["worker c8"]) - median(times["worker c8, 8 items"]))
    res.rows.append(Row(
        "11 work", measure_conc, f"{steady:,.0f} items/s",
        f"{CONCURRENCY / SLEEP:,.0f} items/s", ratios_conc, "min", 0.8,
        note=f"steady rate: {m} items less 8, start-up not counted"))
    res.rows.append(Row(
        "11 work", f"  the same, whole command over {m} items, start-up included",
        f"{m / median(times['worker c8']):,.0f} items/s", f"{m / ideal:,.0f} items/s",
        ratios_whole, "info", None))
    return res


def _check(client: Any, r: Run, n: int, what: str) -> None:
    from rq_cli.core.queue import WorkQueue

    if r.returncode != 0:
        raise RuntimeError(f"{what} exited {r.returncode}: {r.stderr[-300:]}")
    done = WorkQueue(client, Q).stats().counters.get("completed", 0)
    if done != n:
        raise RuntimeError(f"{what}: {done} of {n} items completed")
