"""Case `shards` (issue 30): one sharded queue over a local Cluster of P primaries.

P primaries (``--primaries P``, or ``$RQ_BENCH_PRIMARIES``; default 3) are started with
``cluster-enabled yes`` on free ports, each pinned to a core of its own where the machine has
more than P + 1 cores (core 0 stays the client's), the slots split evenly, the cluster
formed. W worker processes (``--workers``, default 8; unpinned, off the servers' cores) drain
the same items from:

- ``one``: one unsharded queue (one slot, so one primary does all the work);
- ``sharded``: one queue of P shards (``rq-cli reshard``: one per primary).

each with two loops: ``1`` one item at a time (``complete_and_lease``) and ``100``
(``lease(100)`` + one ``complete``). Figures: items/s, the server CPU per item (``INFO cpu``
user + sys) of the **busiest** primary and of all primaries together. Budgets (issue 30, 3
primaries): busiest primary of the sharded queue <= 0.4x the unsharded queue's CPU per item;
total <= 1.15x. Standalone: ``python -m bench --case shards --primaries 8 --workers 14``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from tests.servers import ServerProcess

from ..harness import (
    CaseResult,
    Ctx,
    Row,
    cores,
    drain,
    log,
    median,
    per_rep,
    pin_pid_all_threads,
    rotated,
    run_workers,
)

BASE = "bench:{jobs}"
LOOPS = ("one 1", "sharded 1", "one 100", "sharded 100")
FORM_TIMEOUT = 60.0


def primaries(ctx: Ctx) -> int:
    return int(os.environ.get("RQ_BENCH_PRIMARIES", getattr(ctx, "primaries", 3) or 3))


class LocalCluster:
    """P primaries on loopback, slots split evenly; closed with :meth:`close`."""

    def __init__(self, directory: Path, binary: str, count: int) -> None:
        self.nodes: list[ServerProcess] = []
        self.pinned = cores() > count + 1
        try:
            for i in range(count):
                d = directory / f"node{i}"
                d.mkdir(parents=True, exist_ok=True)
                node = ServerProcess(d, binary=binary, config={
                    "cluster-enabled": "yes", "cluster-config-file": str(d / "nodes.conf"),
                    "cluster-node-timeout": 15000, "maxmemory": "0"}).start()
                self.nodes.append(node)
                if self.pinned and node.pid is not None:
                    pin_pid_all_threads(node.pid, i + 1)
            self._form()
        except BaseException:
            self.close()
            raise

    def _form(self) -> None:
        clients = [n.client(socket_timeout=30.0) for n in self.nodes]
        per = 16384 // len(clients)
        for i, c in enumerate(clients):
            hi = 16383 if i == len(clients) - 1 else (i + 1) * per - 1
            c.execute_command("CLUSTER", "ADDSLOTSRANGE", i * per, hi)
        for n in self.nodes[1:]:
            clients[0].execute_command("CLUSTER", "MEET", "127.0.0.1", n.port)
        deadline = time.monotonic() + FORM_TIMEOUT
        want = f"cluster_known_nodes:{len(clients)}"
        while time.monotonic() < deadline:
            infos = [c.execute_command("CLUSTER", "INFO").decode() for c in clients]
            if all("cluster_state:ok" in i and want in i for i in infos):
                break
            time.sleep(0.1)
        else:
            raise RuntimeError("the bench cluster did not form")
        for c in clients:
            c.close()

    @property
    def url(self) -> str:
        return f"redis+cluster://127.0.0.1:{self.nodes[0].port}"

    def cpu(self) -> list[float]:
        out = []
        for n in self.nodes:
            c = n.client()
            info = c.info("cpu")
            out.append(float(info["used_cpu_sys"]) + float(info["used_cpu_user"]))
            c.close()
        return out

    def flush(self) -> None:
        for n in self.nodes:
            c = n.client()
            c.flushall()
            c.close()

    def close(self) -> None:
        for n in self.nodes:
            n.close()


def _open(url: str, sharded: bool) -> Any:
    from rq_cli.connection.connect import connect
    from rq_cli.core.queue import WorkQueue
    from rq_cli.core.sharding.sharded import ShardedQueue

    client = connect(url)
    return ShardedQueue(client, BASE) if sharded else WorkQueue(client, BASE)


def _worker(loop: str, url: str, quota: int, skip: set[int], go: Any, out: Any) -> None:
    n = os.cpu_count() or 1
    if hasattr(os, "sched_setaffinity") and n > len(skip) + 1:
        os.sched_setaffinity(0, [c for c in range(n) if c not in skip])
    kind, size = loop.split()
    q = _open(url, kind == "sharded")
    q.stats()
    go.wait()
    t0 = time.perf_counter()
    done = drain(q, quota, int(size))
    out.put((done, t0, time.perf_counter()))


def run_loop(cluster: LocalCluster, loop: str, workers: int, total: int) -> dict[str, float]:
    from rq_cli.connection.connect import connect
    from rq_cli.core.sharding.resharding import reshard

    cluster.flush()
    sharded = loop.startswith("sharded")
    if sharded:
        reshard(connect(cluster.url), BASE, len(cluster.nodes))
    q = _open(cluster.url, sharded)
    for n in range(0, total, 10_000):
        q.push([b"{}"] * min(10_000, total - n))
    quota = total // workers
    skip = set(range(1, len(cluster.nodes) + 1)) if cluster.pinned else set()
    done, wall, cpu0, cpu1 = run_workers(_worker, (loop, cluster.url, quota, skip), workers,
                                         measure=cluster.cpu, settle=0.5, timeout=900)
    if done != quota * workers:
        raise RuntimeError(f"shards {loop}: {done} of {quota * workers} items completed")
    per_node = [(b - a) * 1e6 / done for a, b in zip(cpu0, cpu1, strict=True)]
    return {"items_per_s": done / wall, "busiest_us_per_item": max(per_node),
            "total_us_per_item": sum(per_node), "busiest_share": max(per_node) / sum(per_node)}


def run(ctx: Ctx) -> CaseResult:
    res = CaseResult("shards")
    count = primaries(ctx)
    workers = ctx.workers
    total = ctx.scale(24_000, 6_000)
    total -= total % workers
    cluster = LocalCluster(ctx.work / "shards-cluster", ctx.server.proc.binary, count)
    figures: dict[str, list[dict[str, float]]] = {loop: [] for loop in LOOPS}
    try:
        log(f"shards: {count} primaries (pinned: {cluster.pinned}), {workers} workers, "
            f"{total} items")
        for rep in range(ctx.reps):
            for loop in rotated(LOOPS, rep):
                f = run_loop(cluster, loop, workers, total)
                figures[loop].append(f)
                log(f"shards rep {rep + 1}: {loop}: {f['items_per_s']:,.0f} items/s, busiest "
                    f"primary {f['busiest_us_per_item']:.1f} us/item, all "
                    f"{f['total_us_per_item']:.1f} us/item")
    finally:
        cluster.close()

    def med(loop: str, key: str) -> float:
        return median(f[key] for f in figures[loop])

    def ratios(a: str, b: str, key: str, base_key: str | None = None) -> list[float]:
        return per_rep(figures[a], figures[b], key, base_key)

    res.raw = {"primaries": count, "workers": workers, "items": total,
               "loops": {loop: {k: med(loop, k) for k in figures[loop][0]} for loop in LOOPS},
               "per_rep": figures}
    p = f"{count} primaries"
    goal = 0.4 if count == 3 else None
    for size in ("1", "100"):
        s, o = f"sharded {size}", f"one {size}"
        what = "1 at a time" if size == "1" else "lease(100)+complete"
        res.rows += [
            Row("shards", f"{p}, {what}: busiest primary CPU/item / one queue's",
                f"{med(s, 'busiest_us_per_item'):.1f} us", f"{med(o, 'total_us_per_item'):.1f} us",
                ratios(s, o, "busiest_us_per_item", "total_us_per_item"),
                "max" if goal else "info", goal),
            Row("shards", f"{p}, {what}: total server CPU/item / one queue's",
                f"{med(s, 'total_us_per_item'):.1f} us", f"{med(o, 'total_us_per_item'):.1f} us",
                ratios(s, o, "total_us_per_item"), "max", 1.15),
            Row("shards", f"{p}, {what}: items/s / one queue's (info)",
                f"{med(s, 'items_per_s'):,.0f}/s", f"{med(o, 'items_per_s'):,.0f}/s",
                ratios(s, o, "items_per_s"), "info", None),
        ]
    return res
