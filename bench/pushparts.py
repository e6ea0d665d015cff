"""Where the server's CPU of a bulk push goes: ``python -m bench.pushparts [items [reps]]``.

Pushes ``items`` (default 200,000) JSON lines of case ``push`` in batches of 1,000 into a
fresh server (the bench's, Redis at /usr/bin/redis-server) and reads ``INFO cpu`` (user +
sys, round trips included) before and after, for the library's ``push_batches`` (a batch of
fresh random ids is one transaction: MSET, LPUSH, push_commit.lua) and for each of its plain
commands alone (and the HSET of P:enqueued stamps it sent before issue 42, for comparison),
pipelined the same way; and for what ``redis-cli --pipe`` sends in case ``push`` (SET +
LPUSH per item). The least of ``reps`` (default 3) rounds, in
microseconds of server CPU per item.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.servers import ServerProcess

from .cases.push import PAYLOAD
from .harness import server_binary

BATCH = 1000


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    n = int(argv[0]) if argv else 200_000
    reps = int(argv[1]) if len(argv) > 1 else 3
    from rq_cli.core.queue import WorkQueue

    server = ServerProcess(Path(tempfile.mkdtemp(prefix="rq-pushparts-")),
                           binary=server_binary(None)).start()
    r = server.client()
    datas = [PAYLOAD.format(i=i, u=i % 977).rstrip("\n").encode() for i in range(n)]
    ids = [os.urandom(16).hex().encode() for _ in range(n)]
    q = WorkQueue(r, "bq")
    now = str(int(time.time() * 1000)).encode()

    def batches(send: Callable[[Any, int], None]) -> Callable[[], None]:
        def run() -> None:
            for start in range(0, n, BATCH):
                pipe = r.pipeline(transaction=False)
                send(pipe, start)
                pipe.execute()
        return run

    def library() -> None:
        for _ in q.push_batches(datas):
            pass

    parts: dict[str, Callable[[], None]] = {
        "library push_batches (the whole push)": library,
        "  MSET P:item:<id> data": batches(lambda p, s: p.mset(
            {q.keys.item(i.decode()): d for i, d in zip(ids[s:s + BATCH], datas[s:s + BATCH],
                                                        strict=True)})),
        "  HSET P:enqueued <id> <ms> (the stamps, before issue 42)": batches(lambda p, s: p.hset(
            q.keys.enqueued, mapping={i: now for i in ids[s:s + BATCH]})),
        "  LPUSH P:queue <ids>": batches(lambda p, s: p.lpush(q.keys.queue, *ids[s:s + BATCH])),
        "redis-cli --pipe's commands: SET + LPUSH per item": batches(lambda p, s: [
            (p.set(q.keys.item(i.decode()), d), p.lpush(q.keys.queue, i))
            for i, d in zip(ids[s:s + BATCH], datas[s:s + BATCH], strict=True)]),
    }

    def used() -> float:
        info = r.info("cpu")
        return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])

    best: dict[str, float] = {}
    try:
        for _ in range(reps):
            for name, run in parts.items():
                r.flushall()
                before = used()
                run()
                spent = (used() - before) * 1e6 / n
                best[name] = min(best.get(name, spent), spent)
    finally:
        r.close()
        server.close()
    whole = best["library push_batches (the whole push)"]
    print(f"server CPU per item (INFO cpu), {n:,} items in batches of {BATCH:,}, least of "
          f"{reps}; {server.binary}")
    for name, us in best.items():
        print(f"  {name:<52} {us:6.2f} us  {us / whole:5.2f}x the whole push")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
