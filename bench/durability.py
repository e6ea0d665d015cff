"""What durability costs (issues 33, 43): ``python -m bench.durability [--server valkey]
[--reps N] [--appendfsync always] [--wait-fsync]``.

Starts a primary and its replica (no persistence, or ``--appendfsync always|everysec`` on
both; the replica on the same machine) and runs
the same work with ``wait_replicas = 1`` (every write waits for the replica: WAIT, pipelined
with the script call) and without, side by side, interleaved, ``--reps`` times (default 3):

- ``1 at a time``: 2,000 items pushed one per call, then leased and completed one per call
  (``complete_and_lease``: the worker's loop; its completes are confirmed);
- ``batches of 100``: 20,000 items pushed by ``push_batches(batch_size=100)`` (one WAIT per
  batch), then ``lease(100)`` + one ``complete`` of the 100 (one WAIT per batch).

Reported per mode: items/s (push and work together, wall time of this one client) and the
primary's CPU per item (``INFO cpu`` user + sys, whole server, network included), medians,
and the on/off ratio of each (median of the per-repetition ratios). The issue's budget: the
batched CPU per item with durability on within 1.3x of off. This machine is shared and
noisy: only ratios measured side by side mean much.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import QueueOptions
from tests.servers import ServerProcess

from .harness import server_binary

MODES = {"off": QueueOptions(), "on": QueueOptions(wait_replicas=1, wait_timeout=2.0)}
SHAPES = {"1 at a time": (1, 2_000), "batches of 100": (100, 20_000)}


def _cpu(client: Any) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def run_once(primary: ServerProcess, mode: str, batch: int, total: int) -> dict[str, float]:
    client = primary.client()
    client.flushall()
    q = WorkQueue(primary.client(), f"bench-{mode}-{batch}", MODES[mode])
    payload = b'{"n": 1}'
    cpu0, t0 = _cpu(client), time.perf_counter()
    if batch == 1:
        for _ in range(total):
            q.push([payload])
        done: list[Any] = []
        leased = q.lease(1)
        while leased:
            _, leased = q.complete_and_lease([leased[0].id], 1)
            done.append(1)
    else:
        for _ in q.push_batches((payload for _ in range(total)), batch_size=batch):
            pass
        while items := q.lease(batch):
            q.complete([i.id for i in items])
    wall, cpu = time.perf_counter() - t0, _cpu(client) - cpu0
    assert q.stats().pending == 0
    client.close()
    return {"items_per_s": total / wall, "cpu_us_per_item": cpu * 1e6 / total}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", choices=("redis", "valkey"), default=None)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--appendfsync", choices=("no-aof", "always", "everysec"),
                        default="no-aof", help="the persistence of both servers (default: "
                        "none; always: what the guarantees need)")
    parser.add_argument("--wait-fsync", action="store_true",
                        help="durability on: wait_fsync too (WAITAOF; Valkey, Redis >= 7.2)")
    args = parser.parse_args(argv)
    if args.wait_fsync:
        MODES["on"] = QueueOptions(wait_replicas=1, wait_timeout=2.0, wait_fsync=True)
    binary = server_binary(args.server)
    disk = {} if args.appendfsync == "no-aof" else {"appendonly": "yes",
                                                     "appendfsync": args.appendfsync}
    with tempfile.TemporaryDirectory() as tmp:
        primary = ServerProcess(Path(tmp) / "p", binary=binary,
                                config={"repl-diskless-sync-delay": 0, **disk}).start()
        replica = ServerProcess(Path(tmp) / "r", binary=binary, config=disk, extra_args=(
            "--replicaof", "127.0.0.1", str(primary.port))).start()
        try:
            deadline = time.monotonic() + 20
            while replica.client().info("replication").get("master_link_status") != "up":
                if time.monotonic() > deadline:
                    raise SystemExit("the replica did not sync")
                time.sleep(0.05)
            print(f"server: {primary.version}, persistence: {args.appendfsync}, on: "
                  f"{MODES['on']}")
            figures: dict[tuple[str, str], list[dict[str, float]]] = {}
            for rep in range(args.reps):
                for shape, (batch, total) in SHAPES.items():
                    order = ("off", "on") if rep % 2 == 0 else ("on", "off")
                    for mode in order:
                        f = run_once(primary, mode, batch, total)
                        figures.setdefault((shape, mode), []).append(f)
                        print(f"rep {rep + 1} {shape:15} durability {mode:3}: "
                              f"{f['items_per_s']:8,.0f} items/s, "
                              f"{f['cpu_us_per_item']:6.1f} us server CPU/item")
            print()
            print("| shape | items/s off | items/s on | on/off | CPU us/item off | "
                  "CPU us/item on | on/off |")
            print("|---|---|---|---|---|---|---|")
            for shape in SHAPES:
                off, on = figures[(shape, "off")], figures[(shape, "on")]

                def med(rows: list[dict[str, float]], key: str) -> float:
                    return statistics.median(r[key] for r in rows)

                def ratio(key: str, on: list[dict[str, float]] = on,
                          off: list[dict[str, float]] = off) -> float:
                    return statistics.median(a[key] / b[key] for a, b in zip(on, off,
                                                                              strict=True))
                print(f"| {shape} | {med(off, 'items_per_s'):,.0f} | "
                      f"{med(on, 'items_per_s'):,.0f} | {ratio('items_per_s'):.2f}x | "
                      f"{med(off, 'cpu_us_per_item'):.1f} | {med(on, 'cpu_us_per_item'):.1f} | "
                      f"{ratio('cpu_us_per_item'):.2f}x |")
            batched = statistics.median(
                a["cpu_us_per_item"] / b["cpu_us_per_item"] for a, b in
                zip(figures[("batches of 100", "on")], figures[("batches of 100", "off")],
                    strict=True))
            verdict = "PASS" if batched <= 1.3 else "FAIL"
            print(f"\nbatched server CPU per item, on / off: {batched:.2f}x "
                  f"(budget 1.3x): {verdict}")
        finally:
            replica.close()
            primary.close()


if __name__ == "__main__":
    main()
