"""The cases of issue 4, in the order a full run takes them (short ones first)."""

from __future__ import annotations

from collections.abc import Callable

from ..harness import CaseResult, Ctx
from . import (
    clean,
    dash,
    deep,
    fair,
    lease,
    limits,
    memory,
    profile,
    push,
    repair,
    scale,
    server_cpu,
    shards,
    startup,
    stats,
    wake,
    work,
)

CASES: dict[str, Callable[[Ctx], CaseResult]] = {
    "startup": startup.run,  # 6
    "stats": stats.run,  # 5
    "clean": clean.run,  # 3
    "lease": lease.run,  # 2
    "push": push.run,  # 1
    "deep": deep.run,  # 4
    "profile": profile.run,  # the bulk push profile
    "scale": scale.run,  # issue 9: server time per item and the many-worker curve
    "server-cpu": server_cpu.run,  # issue 22: the server's whole CPU per item, W workers
    "filter": repair.run,  # issue 13: filtered requeue-dead of 1M dead items, server never blocked
    "work": work.run,  # issue 11: rq-cli work against a shell loop and the ideal
    "fair": fair.run,  # issue 13: fair queues, fairness and lease cost per tenant count
    "wake": wake.run,  # issue 22: lease --wait on a fair queue, latency and idle cost
    "dash": dash.run,  # issue 21: the console opening a queue of 1M dead items
    "shards": shards.run,  # issue 30: one sharded queue over a local Cluster of P primaries
    "memory": memory.run,  # issue 42: server memory per pending item, rq-cli vs the peer's layout
    "limits": limits.run,  # issue 40: the server's CPU per item of a queue with limits
}
#: Cases that run the rq-cli command (the others use the library).
NEEDS_CLI = ("startup", "stats", "push", "profile", "work")
