"""Case `scale` (issue 9): how far one server core carries each worker loop.

For N = 1, 2, 4, 8 and (cores - 2) worker processes (only the Ns this machine can run), four
loops drain the same number of items:

- ``rq 1``: rq-cli one item at a time, ``complete_and_lease`` (one round trip per item);
  as ``FCALL`` of the Functions library where the server has Functions;
- ``rq 1 evalsha`` (one worker only, for the A/B): the same with ``RQ_CLI_FUNCTIONS=0``, as
  ``EVALSHA`` of the generated script;
- ``rq 100``: rq-cli batched, ``lease(100)`` + one ``complete`` of the 100;
- ``peer``: redis-work-queue 0.1.5, ``lease`` + ``complete`` (five commands per item);
- ``bare``: the floor, ``RPOPLPUSH`` + ``LREM`` (no data, no lease).

Each prints items/s, the server's CPU share (``INFO cpu`` over the wall time), the server's
**execution time per item** (``INFO commandstats`` usec deltas: for rq-cli its script calls,
which include every command they run; for the others all their commands) and the server's
total CPU per item. The execution time does not depend on how fast the client machine is:
it is the budget figure on a small machine. The total CPU figure does (with one client,
wake-ups inflate it), and the curve itself is read on a machine with many cores.

Two more measurements, one process:
- completing in lease order with 10,000 items in flight vs 100 (server us per complete);
- ``lease --count 10000`` and its ``complete``: the longest server call (SLOWLOG, 20 ms line).

Workers run unpinned on every core but the server's.
"""

from __future__ import annotations

import os
import time
from typing import Any

from ..fill import fill
from ..harness import (
    SERVER_CORE,
    CaseResult,
    Ctx,
    Row,
    cores,
    drain,
    drain_peer,
    log,
    median,
    per_rep,
    rotated,
    run_workers,
)

Q = "sq"
LOOPS = ("rq 1", "rq 100", "peer", "bare", "rq 1 evalsha")
#: loops run at one worker only
ONE_WORKER = ("rq 1 evalsha",)
#: commandstats entries that count as the loop's server time
_COMMANDS = ("evalsha", "eval", "fcall", "rpoplpush", "lrem", "get", "setex", "set", "del", "lmove",
             "exists", "ping")


def _unpin() -> None:
    n = os.cpu_count() or 1
    if hasattr(os, "sched_setaffinity") and n > 2:
        os.sched_setaffinity(0, [c for c in range(n) if c != SERVER_CORE])


def _worker(loop: str, port: int, quota: int, go: Any, out: Any) -> None:
    import redis

    _unpin()
    c = redis.Redis(host="127.0.0.1", port=port)
    done = 0
    if loop.startswith("rq"):
        from rq_cli.core.queue import WorkQueue
        from rq_cli.core.scripting.calling import ENV_FUNCTIONS

        if loop == "rq 1 evalsha":
            os.environ[ENV_FUNCTIONS] = "0"  # (this worker process only)
        q = WorkQueue(c, Q)
        q.stats()  # a first script call: connection made
        q.complete(["-warm-up-"])  # (no such item: the hot scripts' library is loaded)
        batch = 1 if loop in ("rq 1", "rq 1 evalsha") else 100
        go.wait()
        t0 = time.perf_counter()
        done = drain(q, quota, batch)
    elif loop == "peer":
        from redis_work_queue import KeyPrefix
        from redis_work_queue import WorkQueue as PeerQueue

        wq = PeerQueue(KeyPrefix(Q))
        c.ping()
        go.wait()
        t0 = time.perf_counter()
        done = drain_peer(wq, c, quota)
    else:  # bare
        src, dst = f"{Q}:queue", f"{Q}:processing"
        c.ping()
        go.wait()
        t0 = time.perf_counter()
        while done < quota:
            item_id = c.rpoplpush(src, dst)
            if item_id is None:
                break
            c.lrem(dst, -1, item_id)
            done += 1
    out.put((done, t0, time.perf_counter()))


def _server_figures(client: Any) -> tuple[float, float]:
    """(usec spent in the loops' commands, server CPU seconds) so far."""
    stats = client.info("commandstats")
    usec = sum(float(v.get("usec", 0)) for k, v in stats.items()
               if k.removeprefix("cmdstat_") in _COMMANDS)
    cpu = client.info("cpu")
    return usec, float(cpu["used_cpu_sys"]) + float(cpu["used_cpu_user"])


def run_loop(ctx: Ctx, loop: str, procs: int, total: int, worker: Any = None) -> dict[str, float]:
    """Drain ``total`` items with ``procs`` worker processes of ``loop``; the server's figures.
    ``worker``: another worker function, with ``_worker``'s arguments (bench.experiments)."""
    server, client = ctx.server, ctx.server.client()
    server.flush()
    fill(client, Q, "peer_pending" if loop in ("peer", "bare") else "pending", total)
    client.config_resetstat()
    quota = total // procs
    done, wall, (usec0, cpu0), (usec1, cpu1) = run_workers(
        worker or _worker, (loop, server.port, quota), procs,
        measure=lambda: _server_figures(client))
    if done != quota * procs:
        raise RuntimeError(f"scale {loop} x{procs}: {done} of {quota * procs} items completed")
    client.close()
    return {"items_per_s": done / wall, "server_cpu_share": (cpu1 - cpu0) / wall,
            "exec_us_per_item": (usec1 - usec0) / done,
            "cpu_us_per_item": (cpu1 - cpu0) * 1e6 / done}


def _completion_cost(ctx: Ctx, in_flight: int, completes: int = 2000) -> float:
    """Server us per complete, completing in lease order with ``in_flight`` items leased."""
    from rq_cli.core.queue import WorkQueue

    client = ctx.server.client()
    ctx.server.flush()
    fill(client, Q, "pending", in_flight + completes)
    q = WorkQueue(client, Q)
    items = q.lease(completes)  # the oldest leases: completed first, in lease order
    for start in range(0, in_flight, 10_000):
        q.lease(min(10_000, in_flight - start))
    client.config_resetstat()
    for item in items[:completes]:
        q.complete([item])
    us = sum(float(v["usec"]) for k, v in client.info("commandstats").items()
             if k in ("cmdstat_evalsha", "cmdstat_eval", "cmdstat_fcall"))
    client.close()
    return us / completes


def _longest_call_ms(ctx: Ctx, count: int = 10_000) -> tuple[float, int]:
    """(longest server call in ms, calls over 20 ms) during ``lease(count)`` + its complete."""
    from rq_cli.core.queue import WorkQueue

    client = ctx.server.client()
    ctx.server.flush()
    fill(client, Q, "pending", count)
    q = WorkQueue(client, Q)
    client.config_set("slowlog-log-slower-than", 1000)
    client.slowlog_reset()
    q.complete(q.lease(count))
    entries = client.slowlog_get(1000)
    client.config_set("slowlog-log-slower-than", 10000)
    client.close()
    longest = max((e["duration"] for e in entries), default=0) / 1000
    return longest, sum(1 for e in entries if e["duration"] > 20_000)


def worker_counts(n_cores: int) -> list[int]:
    top = max(n_cores - 2, 1)
    return sorted({n for n in (1, 2, 4, 8, top) if n <= top})


def run(ctx: Ctx) -> CaseResult:
    res = CaseResult("scale")
    total = ctx.scale(20_000, 4_000)
    counts = worker_counts(cores())
    figures: dict[str, dict[int, list[dict[str, float]]]] = {
        loop: {n: [] for n in counts} for loop in LOOPS}
    for rep in range(ctx.reps):
        for n in counts:
            order = rotated(LOOPS, rep)
            for loop in order:
                if loop in ONE_WORKER and n != counts[0]:
                    continue
                f = run_loop(ctx, loop, n, total - total % n)
                figures[loop][n].append(f)
                log(f"scale rep {rep + 1}: {loop} x{n}: {f['items_per_s']:,.0f} items/s, "
                    f"server {f['exec_us_per_item']:.1f} us/item exec, "
                    f"{f['cpu_us_per_item']:.1f} us/item cpu, cpu share "
                    f"{f['server_cpu_share']:.2f}")

    def med(loop: str, n: int, key: str) -> float:
        return median(f[key] for f in figures[loop][n])

    table = {loop: {n: {k: med(loop, n, k) for k in figures[loop][n][0]} for n in counts
                    if figures[loop][n]} for loop in LOOPS}
    flat = {n: [_completion_cost(ctx, n) for _ in range(ctx.reps)] for n in (100, 10_000)}
    longest = [_longest_call_ms(ctx) for _ in range(ctx.reps)]
    res.raw = {"items": total, "workers": counts, "loops": table,
               "complete_us_in_flight": {str(k): v for k, v in flat.items()},
               "lease_10000_longest_ms": [x[0] for x in longest],
               "lease_10000_calls_over_20ms": [x[1] for x in longest]}

    def ratios(loop: str, base: str, n: int, key: str) -> list[float]:
        return per_rep(figures[loop][n], figures[base][n], key)

    one = counts[0]
    # (commandstats time leaves out the round trips, which the peer makes five of per item:
    # issue 22 replaced these two budgets with the server's whole CPU, case server-cpu)
    res.rows.append(Row("scale", "server exec us/item, 1 at a time / peer (info)",
                        f"{table['rq 1'][one]['exec_us_per_item']:.1f} us",
                        f"{table['peer'][one]['exec_us_per_item']:.1f} us",
                        ratios("rq 1", "peer", one, "exec_us_per_item"), "info", None))
    res.rows.append(Row("scale", "server exec us/item, lease(100)+complete / peer (info)",
                        f"{table['rq 100'][one]['exec_us_per_item']:.1f} us",
                        f"{table['peer'][one]['exec_us_per_item']:.1f} us",
                        ratios("rq 100", "peer", one, "exec_us_per_item"), "info", None))
    res.rows.append(Row("scale", "server exec us/item, 1 at a time: FCALL / EVALSHA (info)",
                        f"{table['rq 1'][one]['exec_us_per_item']:.1f} us",
                        f"{table['rq 1 evalsha'][one]['exec_us_per_item']:.1f} us",
                        ratios("rq 1", "rq 1 evalsha", one, "exec_us_per_item"), "info", None))
    res.rows.append(Row("scale", "server exec us/item, peer / bare RPOPLPUSH+LREM (info)",
                        f"{table['peer'][one]['exec_us_per_item']:.1f} us",
                        f"{table['bare'][one]['exec_us_per_item']:.1f} us",
                        ratios("peer", "bare", one, "exec_us_per_item"), "info", None))
    res.rows.append(Row("scale", "complete in lease order: 10,000 in flight / 100",
                        f"{median(flat[10_000]):.1f} us", f"{median(flat[100]):.1f} us",
                        [a / b for a, b in zip(flat[10_000], flat[100], strict=True)], "max", 1.5))
    res.rows.append(Row("scale", "longest server call, lease --count 10000 + complete",
                        f"{median(x[0] for x in longest):.1f} ms", "-",
                        [x[0] for x in longest], "lt", 20, unit=" ms"))
    top = counts[-1]
    if top >= 8:
        res.rows.append(Row("scale", f"items/s at {top} workers, 1 at a time / peer",
                            f"{table['rq 1'][top]['items_per_s']:,.0f}",
                            f"{table['peer'][top]['items_per_s']:,.0f}",
                            ratios("rq 1", "peer", top, "items_per_s"), "min", 1.5))
    for n in counts:
        main = [lp for lp in LOOPS if lp not in ONE_WORKER]
        # (" / ", not "|": the rows go into Markdown tables)
        res.rows.append(Row("scale", f"items/s at {n} workers: rq 1 / rq 100 / peer / bare",
                            " / ".join(f"{table[lp][n]['items_per_s']:,.0f}" for lp in main),
                            "server cpu share " + " / ".join(
                                f"{table[lp][n]['server_cpu_share']:.2f}" for lp in main),
                            [table["rq 1"][n]["items_per_s"] / table["peer"][n]["items_per_s"]],
                            "info", None))
    return res
