"""Case ``memory`` (issue 42): the server's memory per pending item, ``rq-cli push Q -``
against the peer's layout (``SET P:item:<id>`` + ``LPUSH P:queue <id>``, ids of 32 hex
digits) and a bare ``LPUSH`` of the payload, each loaded into an empty server and measured
as ``used_memory`` after ``MEMORY PURGE``, before and after. Also: the keys rq-cli leaves
beside the items and the lists (no hash, set or sorted set may hold an entry per pending
item: P:enqueued must stay empty for the ids push makes).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..harness import CaseResult, Ctx, Row, log, median, rotated, run_timed

QUEUE = "mq"
#: (payload bytes, items at full size, items in a quick run)
SIZES = ((100, 200_000, 20_000), (1000, 100_000, 10_000))


def lines_file(work: Path, size: int, n: int) -> Path:
    """``n`` JSON lines of exactly ``size`` bytes each (the newline not counted)."""
    path = work / f"mem-{size}-{n}.jsonl"
    if not path.exists():
        head = '{"n":"%08d","pad":"'
        pad = "x" * (size - len(head % 0) - 2)
        with open(path, "w") as f:
            for start in range(0, n, 10_000):
                f.write("".join((head % i) + pad + '"}\n'
                                for i in range(start, min(start + 10_000, n))))
    return path


def used(client: Any) -> int:
    """``used_memory`` after MEMORY PURGE (jemalloc gives back what it can first)."""
    try:
        client.execute_command("MEMORY", "PURGE")
    except Exception:  # (a server without it: the figure is a little higher)
        pass
    return int(client.info("memory")["used_memory"])


def load_pipelined(client: Any, path: Path, peer: bool) -> None:
    """The peer's layout (SET + LPUSH with a uuid4-hex id) or a bare LPUSH per line."""
    pipe = client.pipeline(transaction=False)
    with open(path, "rb") as f:
        for k, line in enumerate(f, 1):
            data = line.rstrip(b"\n")
            if peer:
                item_id = os.urandom(16).hex()
                pipe.set(f"{QUEUE}:item:{item_id}", data)
                pipe.lpush(f"{QUEUE}:queue", item_id)
            else:
                pipe.lpush(f"{QUEUE}:queue", data)
            if k % 5000 == 0:
                pipe.execute()
    pipe.execute()


def run(ctx: Ctx) -> CaseResult:
    res = CaseResult("memory")
    client = ctx.server.client()
    raw: dict[str, Any] = {}
    for size, full, quick in SIZES:
        n = ctx.scale(full, quick)
        path = lines_file(ctx.work, size, n)

        def rq() -> None:
            if ctx.cli:
                r = run_timed([ctx.cli, "push", QUEUE, "-"], stdin_path=path, env=ctx.env,
                              cwd=ctx.work)
                if r.returncode:
                    raise RuntimeError(f"rq-cli push exited {r.returncode}: {r.stderr[-300:]}")
            else:  # (the same writes as the CLI's: push_batches of the lines)
                from rq_cli.core.queue import WorkQueue

                with open(path, "rb") as f:
                    for _ in WorkQueue(client, QUEUE).push_batches(
                            line.rstrip(b"\n") for line in f):
                        pass

        loads = {"rq-cli push": rq, "peer layout": lambda: load_pipelined(client, path, True),
                 "bare LPUSH": lambda: load_pipelined(client, path, False)}
        per: dict[str, list[float]] = {k: [] for k in loads}
        beside: list[int] = []
        for rep in range(ctx.reps):
            for name in rotated(list(loads), rep):
                ctx.server.flush()
                before = used(client)
                loads[name]()
                if client.llen(f"{QUEUE}:queue") != n:
                    raise RuntimeError(f"{name}: expected {n} items in line")
                per[name].append((used(client) - before) / n)
                if name == "rq-cli push":
                    beside.append(client.hlen(f"{QUEUE}:enqueued"))
                log(f"memory {size} B rep {rep + 1}: {name}: {per[name][-1]:.0f} B/item")
        ctx.server.flush()
        ours, peer, bare = per["rq-cli push"], per["peer layout"], per["bare LPUSH"]
        raw[f"{size}B"] = {"items": n, "bytes_per_item": per, "enqueued_fields": beside}
        label = f"{size} B x {n // 1000}k"
        res.rows.append(Row("memory", f"pending item ({label}) rq-cli / peer layout",
                            f"{median(ours):.0f} B", f"{median(peer):.0f} B",
                            [o / p for o, p in zip(ours, peer, strict=True)], "max", 1.05,
                            note="used_memory after MEMORY PURGE"))
        res.rows.append(Row("memory", f"pending item ({label}) rq-cli / bare LPUSH",
                            f"{median(ours):.0f} B", f"{median(bare):.0f} B",
                            [o / b for o, b in zip(ours, bare, strict=True)], "info", None))
        res.rows.append(Row("memory", f"P:enqueued fields per pending item ({label})",
                            f"{max(beside)} fields", f"{n} items",
                            [max(beside) / n], "max", 0.0, unit="",
                            note="no per-item entry beside the lists"))
    res.raw = raw
    return res
