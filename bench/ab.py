"""A/B of script versions, side by side on one server:
``python -m bench.ab REV [items [rounds]]``.

The scripts of git revision ``REV`` (its ``core.scripting.scripts.source``) against the working
tree's, alternating, ``rounds`` rounds (default 3); per loop the server's script time per
item (EVALSHA usec from ``INFO commandstats``, wall clock: inflated when the server waits
for a core), the server process's CPU time per item (``INFO cpu``: not inflated, but with
its network work) and nested commands per item; then each loop's ratio of the working tree
to ``REV`` per round (the median and every round's). :func:`alternate` and :func:`report`
are the A/B loop of every side-by-side bench (bench/batchab.py).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from statistics import median
from typing import Any

from rq_cli.core.queue import WorkQueue
from tests.servers import ServerProcess, find_server_binary

from .nested import drain_batched, drain_one_at_a_time, measure

#: The two ways a worker drains: (name, drain(queue)).
LOOPS = (("1 at a time", drain_one_at_a_time), ("lease(100)+complete", drain_batched))


def old_sources(rev: str) -> dict[str, str]:
    """Every script's source at ``rev``, made by that revision's own code."""
    tmp = Path(tempfile.mkdtemp(prefix="rq-ab-"))
    subprocess.run(f"git archive {rev} rq_cli | tar -x -C {tmp}", shell=True, check=True)
    code = ("import json,sys; sys.path.insert(0, sys.argv[1]); "
            "from rq_cli.core.scripting.scripts import source as s; "
            "print(json.dumps({n: s(n) for n in ('lease', 'complete', 'push')}))")
    out = subprocess.run([sys.executable, "-c", code, str(tmp)], check=True,
                         capture_output=True, text=True).stdout
    import json

    return dict(json.loads(out))


#: What a loop's runs are reported by: (the key of nested.measure's result, its name).
EXEC = ("us_per_item", "exec")
CPU = ("cpu_us_per_item", "server CPU")
#: One round of one side: (client, label, round number) -> {loop: nested.measure's result}.
Round = Callable[[Any, str, int], dict[str, dict[str, Any]]]


def alternate(labels: tuple[str, str], rounds: int, one: Round) -> dict[str, list[dict[str, Any]]]:
    """On one private server, ``rounds`` rounds of each side in turn (``one``): each loop's
    runs, by "<label> <loop>". Alternating keeps the two sides' load alike when the
    machine's drifts."""
    res: dict[str, list[dict[str, Any]]] = {}
    with ServerProcess(binary=find_server_binary()) as server:
        server.start()
        client = server.client()
        for n in range(rounds):
            for label in labels:
                for loop, measured in one(client, label, n).items():
                    res.setdefault(f"{label} {loop}", []).append(measured)
    return res


def report(res: dict[str, list[dict[str, Any]]], labels: tuple[str, str],
           loops: Sequence[str], keys: Sequence[tuple[str, str]]) -> None:
    """Print each loop's median per side (and every run), then each round's ratio of the
    second side to the first (the median and every round's): the two ran one after the
    other, so the ratio holds when the machine's load drifts between rounds."""
    def runs_of(values: list[float]) -> str:
        return ", ".join(f"{v:.2f}" for v in sorted(values))

    first, second = labels
    for loop in loops:
        for label in labels:
            runs = res[f"{label} {loop}"]
            figures = ", ".join(f"{what} {median(r[key] for r in runs):6.1f} us/item (runs "
                                f"{runs_of([r[key] for r in runs])})" for key, what in keys)
            print(f"{label + ' ' + loop:32s} {figures}, "
                  f"{runs[0]['nested_per_item']:.2f} nested/item")
    for loop in loops:
        pairs = list(zip(res[f"{second} {loop}"], res[f"{first} {loop}"], strict=True))
        for key, what in keys:
            ratios = [a[key] / b[key] for a, b in pairs]
            print(f"{second} / {first} {loop:20s} {what:10s} median {median(ratios):.3f} "
                  f"(runs {runs_of(ratios)})")


def main(argv: list[str]) -> int:
    rev = argv[0] if argv else "HEAD"
    items = int(argv[1]) if len(argv) > 1 else 2000
    rounds = int(argv[2]) if len(argv) > 2 else 3
    old = old_sources(rev)
    data = [b'{"n":1,"body":"lorem ipsum dolor sit amet"}'] * items

    def one(client: Any, label: str, _: int) -> dict[str, dict[str, Any]]:
        q = WorkQueue(client, "ab")
        # (both as EVALSHA: the scripts of the two revisions side by side)
        q.caller.functions = False
        if label == rev:
            q.caller._scripts = {n: client.register_script(src) for n, src in old.items()}
            for src in old.values():
                client.script_load(src)
        out = {}
        for loop, drain in LOOPS:
            q.push(data)
            out[loop] = measure(client, items, partial(drain, q))
        out["push"] = measure(client, items, partial(q.push, data))
        q.purge("all")
        return out

    labels = (rev, "worktree")
    report(alternate(labels, rounds, one), labels, [*(loop for loop, _ in LOOPS), "push"],
           (EXEC, CPU))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
