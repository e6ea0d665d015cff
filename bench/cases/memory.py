"""Case ``memory`` (issue 42): the server's memory per pending item, ``rq-cli push Q -``
against the peer's layout (``SET P:item:<id>`` + ``LPUSH P:queue <id>``, ids of 32 hex
digits) and a bare ``LPUSH`` of the payload, each loaded into an empty server and measured
as ``used_memory`` after ``MEMORY PURGE``, before and after. Also: the keys rq-cli leaves
beside the items and the lists (no hash, set or sorted set may hold an entry per pending
item: P:enqueued must stay empty for the ids push makes). And a leased item (100 B):
rq-cli's ``lease`` against the peer's (``redis-work-queue`` 0.1.5), with what each part of
rq-cli's costs (each key family removed in turn: the difference).
"""

from __future__ import annotations

import contextlib
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
    with contextlib.suppress(Exception):  # (a server without it: a little higher)
        client.execute_command("MEMORY", "PURGE")
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

        def rq(path: Path = path) -> None:
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

        loads = {"rq-cli push": rq,
                 "peer layout": lambda path=path: load_pipelined(client, path, True),
                 "bare LPUSH": lambda path=path: load_pipelined(client, path, False)}
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
        # (a batch the server runs more than PUSH_STAMP_SLACK_MS after the client's reading
        # of its clock is stamped: rare, and only on a loaded machine)
        res.rows.append(Row("memory", f"P:enqueued fields per pending item ({label})",
                            f"{max(beside)} fields", f"{n} items",
                            [b / n for b in beside], "max", 0.01, unit="",
                            note="no per-item entry beside the lists"))
    leased_rows, raw["leased"] = leased(ctx, client)
    res.rows += leased_rows
    raw["table"] = table_md(raw)
    res.raw = raw
    return res


#: rq-cli's parts of a leased item beyond the peer's, each removed in turn to measure it:
#: (name, the keys: a pattern of per-item keys, or one key). What each buys: BUYS.
PARTS = (("lease key (v0.3 P:lease:<id>, TTL)", f"{QUEUE}:lease:*"),
         ("holders (P:holders id -> session)", f"{QUEUE}:holders"),
         ("leases index (P:leases id -> deadline)", f"{QUEUE}:leases"),
         ("attempts (P:attempts id -> n; none on a first attempt)", f"{QUEUE}:attempts"))
#: The guarantee each part buys (docs/DESIGN.md section 2, "What a leased item costs").
BUYS = {
    PARTS[0][0]: "peers of the other generation see the item as leased (the compat layout "
                 "writes both generations' keys: each reads only its own, EXISTS)",
    PARTS[1][0]: "the last holder of an abandoned item (lease run out): reclaim of a named "
                 "worker's items, holders/peek/item; says a first attempt",
    PARTS[2][0]: "clean and stats find run-out leases in O(log N), not by reading "
                 "processing; an id leaves a long processing list from its nearer end",
    PARTS[3][0]: "max_attempts and backoff from the second attempt on (a first one is "
                 "said by its holder entry)",
}


def leased(ctx: Ctx, client: Any) -> tuple[list[Row], dict[str, Any]]:
    """Memory per leased item (100 B, one lease per item), rq-cli against the peer, and the
    cost of each of rq-cli's parts."""
    from redis_work_queue import Item, KeyPrefix  # type: ignore[import-untyped]
    from redis_work_queue import WorkQueue as PeerQueue

    from rq_cli.core.queue import WorkQueue

    n = ctx.scale(10_000, 1000)
    data = b'{"n":"%08d","pad":"' + b"x" * 78 + b'"}'
    ours: list[float] = []
    peer: list[float] = []
    parts: dict[str, list[float]] = {name: [] for name, _ in PARTS}
    for rep in range(ctx.reps):
        for who in rotated(["rq-cli", "peer"], rep):
            ctx.server.flush()
            before = used(client)
            if who == "rq-cli":
                q = WorkQueue(client, QUEUE)
                for _ in q.push_batches(data % i for i in range(n)):
                    pass
                got = 0
                while got < n:
                    got += len(q.lease(1000, lease_seconds=3600))
                ours.append((used(client) - before) / n)
                for name, pattern in PARTS:  # (each removed in turn: what it costs)
                    was = used(client)
                    keys = list(client.scan_iter(match=pattern, count=1000)) \
                        if "*" in pattern else [pattern]
                    for k in range(0, len(keys), 1000):  # (DEL: UNLINK frees later)
                        client.delete(*keys[k:k + 1000])
                    parts[name].append((was - used(client)) / n)
            else:
                p = PeerQueue(KeyPrefix(QUEUE))
                for i in range(n):
                    p.add_item(client, Item(data % i))
                for _ in range(n):
                    p.lease(client, 3600, block=False)
                peer.append((used(client) - before) / n)
            log(f"memory leased rep {rep + 1}: {who}")
    ctx.server.flush()
    rows = [Row("memory", f"leased item (100 B x {n // 1000}k) rq-cli / the peer's",
                f"{median(ours):.0f} B", f"{median(peer):.0f} B",
                [o / p for o, p in zip(ours, peer, strict=True)], "max", 1.5)]
    return rows, {"items": n, "rq-cli": ours, "peer": peer, "parts": parts}


def table_md(raw: dict[str, Any]) -> str:
    """The memory case's tables for bench/RESULTS.md: bytes per pending item per layout and
    payload, and what a leased item's parts cost."""
    sizes = [k for k in raw if k.endswith("B") and k[:-1].isdigit()]
    head = "| layout | " + " | ".join(
        f"{k[:-1]} B payload, {raw[k]['items']:,} items" for k in sizes) + " |"
    out = [head, "|---|" + "---|" * len(sizes)]
    for name in ("rq-cli push", "peer layout", "bare LPUSH"):
        out.append(f"| {name} | " + " | ".join(
            f"{median(raw[k]['bytes_per_item'][name]):,.0f} B" for k in sizes) + " |")
    out.append("| P:enqueued fields after `rq-cli push` | " + " | ".join(
        f"{max(raw[k]['enqueued_fields']):,}" for k in sizes) + " |")
    lz = raw["leased"]
    out += ["", f"Leased item (100 B payload, {lz['items']:,} items, one lease each):", "",
            "| leased item | bytes per item | buys |", "|---|---|---|",
            f"| rq-cli (compat layout) | {median(lz['rq-cli']):,.0f} B | |",
            f"| the peer (`redis-work-queue` 0.1.5) | {median(lz['peer']):,.0f} B | "
            "data, list entry, its own lease key |"]
    for name, values in lz["parts"].items():
        out.append(f"| of rq-cli's: {name} | {median(values):,.0f} B | "
                   f"{BUYS.get(name, '')} |")
    rest = median(lz["rq-cli"]) - median(lz["peer"]) - sum(
        median(v) for v in lz["parts"].values())
    out.append(f"| of rq-cli's: the rest beyond the peer's | {rest:,.0f} B | |")
    return "\n".join(out)
