"""A sharded push's cost with and without a generation draining (docs/DESIGN.md section 7,
"De-dup across a resize"): ``python -m bench.shardpush [N]`` starts a private redis-server
($RQ_CLI_SERVER_BIN, else redis-server), pushes N items (30,000) with ids into a queue of 3
shards, then into one resized 3 -> 4 (the 3 old shards draining), and prints per case the
wall time, the server's calls by command (INFO commandstats) and its CPU per item. The
draining case adds, per chunk of a bulk push, one EXISTS per id and one ZMSCORE of the dead
and de-dup ids per old shard, in the same one pipelined round trip."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time

import redis

from rq_cli.core.sharding.resharding import reshard
from rq_cli.core.sharding.sharded import ShardedQueue
from rq_cli.core.types import NewItem


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = int(s.getsockname()[1])
    s.close()
    return port


def main(n_items: int) -> None:
    port = _free_port()
    server = os.environ.get("RQ_CLI_SERVER_BIN", "redis-server")
    proc = subprocess.Popen([server, "--port", str(port), "--save", "", "--appendonly", "no",
                             "--dir", tempfile.mkdtemp()], stdout=subprocess.DEVNULL)
    r = redis.Redis(port=port)
    while True:
        try:
            r.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    try:
        _cases(r, n_items)
    finally:
        proc.terminate()
        proc.wait()


def _cases(r: redis.Redis, n_items: int) -> None:
    for label, draining in (("no draining generation", False), ("one generation draining", True)):
        r.flushall()
        base = "b:{q}"
        reshard(r, base, 3)
        if draining:
            ShardedQueue(r, base).push([NewItem(b"{}", f"old{n}") for n in range(1000)])
            reshard(r, base, 4)
        q = ShardedQueue(r, base)
        r.config_resetstat()
        start = time.perf_counter()
        n = sum(len(b) for b in q.push_batches(NewItem(b"{}", f"i{i}") for i in range(n_items)))
        took = time.perf_counter() - start
        stats = r.info("commandstats")
        calls = {k[8:]: v["calls"] for k, v in stats.items()}
        usec = sum(v["usec"] for v in stats.values())
        by_command = ", ".join(f"{k} {v}" for k, v in sorted(calls.items()))
        print(f"{label}: {n} items in {took:.2f} s ({n / took:,.0f}/s); server calls "
              f"{sum(calls.values())} ({by_command}); server CPU {usec / 1000:.0f} ms "
              f"({usec / n:.2f} us/item)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30000)
