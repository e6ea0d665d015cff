"""Case 5, stats: on a queue with 1M pending, 100k processing (leased) and 100k dead vs the
same on an empty queue of the same server -- the CLI command ``rq-cli stats Q --json`` (wall
time of the process) and the library's ``WorkQueue.stats()``; ``rq info`` on an empty
database is the peer reference.
"""

from __future__ import annotations

import json
import subprocess
import time

from ..fill import fill
from ..harness import VENV_BIN, CaseResult, Ctx, Row, log, median, skipped_row, time_commands

BIG = "sq"
EMPTY = "se"


def run(ctx: Ctx) -> CaseResult:
    from rq_cli.core.queue import WorkQueue

    res = CaseResult("stats")
    server = ctx.server
    client = server.client()
    pending, processing, dead = (ctx.scale(1_000_000, 100_000), ctx.scale(100_000, 10_000),
                                 ctx.scale(100_000, 10_000))
    server.flush()
    fill(client, BIG, "pending", pending)
    fill(client, BIG, "leased", processing)
    fill(client, BIG, "dead", dead)
    client.hset(f"{BIG}:counters", mapping={"pushed": pending + processing + dead,
                                             "leased": processing + dead, "dead": dead})
    big, empty = WorkQueue(client, BIG), WorkQueue(client, EMPTY)
    s = big.stats()
    if (s.pending, s.processing, s.dead) != (pending, processing, dead):
        raise RuntimeError(f"stats fill: {s}")
    res.raw["sizes"] = {"pending": pending, "processing": processing, "dead": dead}

    # Library: blocks of calls, big and empty alternating.
    calls = 200
    lib: dict[str, list[float]] = {"big": [], "empty": []}
    for rnd in range(ctx.reps * 4):
        pair = [("big", big), ("empty", empty)]
        for name, q in (pair if rnd % 2 == 0 else pair[::-1]):
            t0 = time.perf_counter()
            for _ in range(calls):
                q.stats()
            lib[name].append((time.perf_counter() - t0) / calls)
    res.raw["library_seconds_per_call"] = lib
    res.rows.append(Row("5 stats", "library stats(): big queue / empty queue",
                        f"{median(lib['big']) * 1e6:.0f} us",
                        f"{median(lib['empty']) * 1e6:.0f} us",
                        [b / e for b, e in zip(lib["big"], lib["empty"], strict=True)], "max", 1.3))

    rq = str(VENV_BIN / "rq")
    cmds = {"rq info (empty db)": [rq, "info", "-u", server.url.rsplit("/", 1)[0] + "/1"]}
    if ctx.cli:
        out = subprocess.run([ctx.cli, "stats", BIG, "--json"], env=ctx.env, cwd=ctx.work,
                             capture_output=True, text=True, timeout=60)
        res.raw["cli_stats_output"] = out.stdout[:2000]
        if out.returncode:
            raise RuntimeError(f"rq-cli stats exited {out.returncode}: {out.stderr[-300:]}")
        try:
            first = json.loads(out.stdout.splitlines()[0])
            if first.get("pending") != pending:
                log(f"stats: unexpected rq-cli stats output {out.stdout[:200]!r}")
        except (ValueError, IndexError):
            log(f"stats: rq-cli stats --json printed no JSON: {out.stdout[:200]!r}")
        cmds["rq-cli stats big"] = [ctx.cli, "stats", BIG, "--json"]
        cmds["rq-cli stats empty"] = [ctx.cli, "stats", EMPTY, "--json"]
    times, cpu, tool = time_commands(cmds, rounds=ctx.scale(5, 2), runs=ctx.scale(8, 3),
                                     env=ctx.env, cwd=ctx.work)
    res.raw["cli_seconds"] = times
    res.raw["cli_cpu_seconds"] = cpu
    res.raw["cli_timing_tool"] = tool
    med = {k: [median(r) for r in v] for k, v in times.items()}
    log("stats: " + ", ".join(f"{k} {median(v) * 1000:.0f} ms" for k, v in med.items()))
    if ctx.cli:
        b, e, i = med["rq-cli stats big"], med["rq-cli stats empty"], med["rq info (empty db)"]
        res.rows.append(Row("5 stats", "rq-cli stats --json: big queue / empty queue",
                            f"{median(b) * 1000:.0f} ms", f"{median(e) * 1000:.0f} ms",
                            [x / y for x, y in zip(b, e, strict=True)], "max", 1.3))
        res.rows.append(Row("5 stats", "rq-cli stats big queue / rq info empty (reference)",
                            f"{median(b) * 1000:.0f} ms", f"{median(i) * 1000:.0f} ms",
                            [x / y for x, y in zip(b, i, strict=True)], "info", None))
    else:
        res.rows.append(skipped_row("5 stats", "rq-cli stats --json: big queue / empty queue",
                                    "max", 1.3, "CLI not available"))
    server.flush()
    return res
