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
from typing import Any

from rq_cli.core.queue import WorkQueue

from .ab import CPU, LOOPS, alternate, report
from .nested import measure


def main(argv: list[str]) -> int:
    items = int(argv[0]) if argv else 2000
    rounds = int(argv[1]) if len(argv) > 1 else 5
    data = [b'{"n":1,"body":"lorem ipsum dolor sit amet"}'] * items

    def one(client: Any, label: str, n: int) -> dict[str, dict[str, Any]]:
        q = WorkQueue(client, "ab")
        batch = f"b{n}" if label == "batch" else None
        out = {}
        for loop, drain in LOOPS:
            q.push(data, batch=batch)
            out[loop] = measure(client, items, partial(drain, q))
        q.purge("all")
        return out

    labels = ("plain", "batch")
    report(alternate(labels, rounds, one), labels, [loop for loop, _ in LOOPS], (CPU,))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
