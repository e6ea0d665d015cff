"""Where a script call's server time goes: the nested commands each engine loop runs per item.

``python -m bench.nested [items]`` starts its own redis-server, pushes ``items`` items with
rq-cli, then drains them with each loop and prints, per item: the script time (EVALSHA
usec), how many nested commands ran and which, from ``INFO commandstats`` deltas.

- ``1 at a time``: ``complete_and_lease`` (one script call per item);
- ``lease(100)+complete``: ``lease(100)`` then one ``complete`` of the 100;
- ``push``: ``push`` of ``items`` new items in batches (random ids).

Figures are server execution time, not wall time: they do not depend on the client.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import ItemRef
from tests.servers import ServerProcess, find_server_binary

Q = "nq"


def _stats(client: Any) -> dict[str, tuple[int, float]]:
    return {k.removeprefix("cmdstat_"): (int(v["calls"]), float(v["usec"]))
            for k, v in client.info("commandstats").items()}


def _cpu(client: Any) -> float:
    """The server process's CPU seconds so far (not inflated when it waits for a core, as
    commandstats' wall-clock usec are on a loaded machine; includes its network work)."""
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def drain_one_at_a_time(q: WorkQueue) -> None:
    """Drain ``q`` as a worker does, one item per ``complete_and_lease``."""
    refs: list[ItemRef] = []
    while True:
        _, got = q.complete_and_lease(refs, 1)
        refs = [ItemRef(i.id, i.session) for i in got]
        if not refs:
            break


def drain_batched(q: WorkQueue) -> None:
    """Drain ``q`` by ``lease(100)`` and one ``complete`` of the 100."""
    while got := q.lease(100):
        q.complete([ItemRef(i.id, i.session) for i in got])


def measure(client: Any, items: int, run: Callable[[], object]) -> dict[str, Any]:
    client.config_resetstat()
    before = _stats(client)
    cpu0 = _cpu(client)
    run()
    cpu1 = _cpu(client)
    after = _stats(client)
    delta = {k: (c - before.get(k, (0, 0.0))[0], u - before.get(k, (0, 0.0))[1])
             for k, (c, u) in after.items()}
    delta.pop("info", None)
    delta.pop("config|resetstat", None)
    scripts = {k: v for k, v in delta.items() if k in ("evalsha", "eval", "fcall")}
    script_calls = sum(c for c, _ in scripts.values())
    script_us = sum(u for _, u in scripts.values())
    nested = {k: c for k, (c, _) in delta.items()
              if k not in ("evalsha", "eval", "fcall", "script|load", "function|load") and c}
    return {"calls": script_calls, "us_per_item": script_us / items,
            "cpu_us_per_item": (cpu1 - cpu0) * 1e6 / items,
            "nested_per_item": sum(nested.values()) / items,
            # the nested commands' own time: the rest of the script time is Lua and calling
            "nested_us_per_item": sum(u for k, (c, u) in delta.items() if k in nested) / items,
            "by_command": {k: round(c / items, 2) for k, c in
                           sorted(nested.items(), key=lambda kv: -kv[1])}}


def main(argv: list[str]) -> int:
    items = int(argv[0]) if argv else 2000
    with ServerProcess(binary=find_server_binary()) as server:
        server.start()
        client = server.client()
        q = WorkQueue(client, Q)
        results: dict[str, dict[str, Any]] = {}

        def push() -> None:
            q.push([b'{"n":1,"body":"lorem ipsum dolor sit amet"}'] * items)

        results["push"] = measure(client, items, push)

        results["1 at a time"] = measure(client, items, lambda: drain_one_at_a_time(q))
        q.push([b'{"n":1,"body":"lorem ipsum dolor sit amet"}'] * items)
        results["lease(100)+complete"] = measure(client, items, lambda: drain_batched(q))
        for name, r in results.items():
            print(f"{name}: {r['us_per_item']:.1f} us/item in scripts, "
                  f"{r['cpu_us_per_item']:.1f} us/item server CPU, {r['calls']} calls, "
                  f"{r['nested_per_item']:.2f} nested commands/item taking "
                  f"{r['nested_us_per_item']:.1f} us")
            print("   " + ", ".join(f"{k} {v}" for k, v in r["by_command"].items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
