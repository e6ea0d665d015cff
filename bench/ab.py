"""A/B of script versions, side by side on one server:
``python -m bench.ab REV [items [rounds]]``.

The scripts of git revision ``REV`` (its ``core.scripts.source``) against the working
tree's, alternating, ``rounds`` rounds (default 3); per loop the server's script time per
item (EVALSHA usec from ``INFO commandstats``, wall clock: inflated when the server waits
for a core), the server process's CPU time per item (``INFO cpu``: not inflated, but with
its network work) and nested commands per item; then each loop's ratio of the working tree
to ``REV`` per round (the median and every round's).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path
from statistics import median
from typing import Any

from rq_cli.core.queue import WorkQueue
from tests.servers import ServerProcess, find_server_binary

from .nested import drain_batched, drain_one_at_a_time, measure


def old_sources(rev: str) -> dict[str, str]:
    """Every script's source at ``rev``, made by that revision's own code."""
    tmp = Path(tempfile.mkdtemp(prefix="rq-ab-"))
    subprocess.run(f"git archive {rev} rq_cli | tar -x -C {tmp}", shell=True, check=True)
    code = ("import json,sys; sys.path.insert(0, sys.argv[1]); "
            "from rq_cli.core.scripts import source as s; "
            "print(json.dumps({n: s(n) for n in ('lease', 'complete', 'push')}))")
    out = subprocess.run([sys.executable, "-c", code, str(tmp)], check=True,
                         capture_output=True, text=True).stdout
    import json

    return dict(json.loads(out))


def main(argv: list[str]) -> int:
    rev = argv[0] if argv else "HEAD"
    items = int(argv[1]) if len(argv) > 1 else 2000
    rounds = int(argv[2]) if len(argv) > 2 else 3
    old = old_sources(rev)
    data = [b'{"n":1,"body":"lorem ipsum dolor sit amet"}'] * items
    with ServerProcess(binary=find_server_binary()) as server:
        server.start()
        client = server.client()
        res: dict[str, list[dict[str, Any]]] = {}
        for _ in range(rounds):
            for label in (rev, "worktree"):
                q = WorkQueue(client, "ab")
                # (both as EVALSHA: the scripts of the two revisions side by side)
                q.caller.functions = False
                if label == rev:
                    q.caller._scripts = {n: client.register_script(src)
                                         for n, src in old.items()}
                    for src in old.values():
                        client.script_load(src)
                q.push(data)

                res.setdefault(f"{label} 1 at a time", []).append(
                    measure(client, items, partial(drain_one_at_a_time, q)))
                q.push(data)
                res.setdefault(f"{label} lease(100)+complete", []).append(
                    measure(client, items, partial(drain_batched, q)))
                client.config_resetstat()
                pushed = measure(client, items, partial(q.push, data))
                res.setdefault(f"{label} push", []).append(pushed)
                q.purge("all")
        for name, runs in sorted(res.items(), key=lambda kv: kv[0].split(" ", 1)[1]):
            us = sorted(r["us_per_item"] for r in runs)
            cpu = sorted(r["cpu_us_per_item"] for r in runs)
            print(f"{name:32s} exec {us[1]:6.1f} us/item (runs "
                  f"{', '.join(f'{u:.1f}' for u in us)}), server CPU {cpu[1]:6.1f} us/item "
                  f"(runs {', '.join(f'{u:.1f}' for u in cpu)}), "
                  f"{runs[0]['nested_per_item']:.2f} nested/item")
        # each round's worktree/REV ratio: the two ran one after the other, so the ratio
        # holds when the machine's load drifts between rounds
        for loop in ("1 at a time", "lease(100)+complete", "push"):
            pairs = list(zip(res[f"worktree {loop}"], res[f"{rev} {loop}"], strict=True))
            for key, what in (("us_per_item", "exec"), ("cpu_us_per_item", "server CPU")):
                ratios = sorted(a[key] / b[key] for a, b in pairs)
                print(f"worktree / {rev} {loop:20s} {what:10s} median {median(ratios):.3f} "
                      f"(runs {', '.join(f'{r:.2f}' for r in ratios)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
