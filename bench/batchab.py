"""What a batch costs an item in one (docs/batches.md), side by side on one server:
``python -m bench.batchab [items [rounds]]``.

The same items drained with and without ``push --batch``, alternating, ``rounds`` rounds
(default 5): the server's CPU time per item (``INFO cpu``) and nested commands per item, one at
a time (``complete_and_lease``) and batched (``lease(100)`` + one ``complete``); then each
round's ratio of the batch to no batch (the median and every round's). An item in no batch
costs nothing (``python -m bench.ab REV`` compares the scripts of a revision before batches).
"""

from __future__ import annotations

import sys
from functools import partial
from statistics import median
from typing import Any

from rq_cli.core.queue import WorkQueue
from tests.servers import ServerProcess, find_server_binary

from .nested import drain_batched, drain_one_at_a_time, measure


def main(argv: list[str]) -> int:
    items = int(argv[0]) if argv else 2000
    rounds = int(argv[1]) if len(argv) > 1 else 5
    data = [b'{"n":1,"body":"lorem ipsum dolor sit amet"}'] * items
    with ServerProcess(binary=find_server_binary()) as server:
        server.start()
        client = server.client()
        res: dict[str, list[dict[str, Any]]] = {}
        for n in range(rounds):
            for label in ("plain", "batch"):
                q = WorkQueue(client, "ab")
                batch = {"batch": f"b{n}"} if label == "batch" else {}
                for loop, drain in (("1 at a time", drain_one_at_a_time),
                                    ("lease(100)+complete", drain_batched)):
                    q.push(data, **batch)
                    res.setdefault(f"{label} {loop}", []).append(
                        measure(client, items, partial(drain, q)))
                q.purge("all")
        for loop in ("1 at a time", "lease(100)+complete"):
            for label in ("plain", "batch"):
                runs = res[f"{label} {loop}"]
                cpu = sorted(r["cpu_us_per_item"] for r in runs)
                print(f"{label:6s} {loop:20s} server CPU {median(cpu):6.1f} us/item (runs "
                      f"{', '.join(f'{u:.1f}' for u in cpu)}), "
                      f"{runs[0]['nested_per_item']:.2f} nested/item")
            pairs = list(zip(res[f"batch {loop}"], res[f"plain {loop}"], strict=True))
            ratios = sorted(a["cpu_us_per_item"] / b["cpu_us_per_item"] for a, b in pairs)
            print(f"batch / plain {loop:20s} server CPU median {median(ratios):.3f} "
                  f"(runs {', '.join(f'{r:.2f}' for r in ratios)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
