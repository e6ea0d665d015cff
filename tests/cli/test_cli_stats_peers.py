"""rq-cli stats beside peer workers: a peer's live lease is leased, not abandoned.

Peers (the real PyPI ``redis-work-queue`` 0.1.5, and the v0.3 client of peer_v03.py) write
only their lease key, never rq-cli's lease index (P:leases): stats counts their leases by
the key, so ``stats --check --max-abandoned 0`` (the README's cron line) stays quiet while
every worker is healthy.
"""

from __future__ import annotations

import pytest
from peer_v03 import V03Queue
from redis_work_queue import Item, KeyPrefix  # type: ignore[import-untyped]
from redis_work_queue import WorkQueue as V01Queue

from rq_cli.core.contract.limits import LEASED_PAGE
from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem

pytest_plugins = ["cli_helpers"]  # the cli(...) fixture

pytestmark = pytest.mark.filterwarnings(  # redis-py deprecates SETEX, which the peers use
    "ignore:Call to deprecated setex:DeprecationWarning")


def _v01_lease(r):
    peer = V01Queue(KeyPrefix("q"))
    for n in range(3):
        peer.add_item(r, Item(f"{n}".encode()))
    assert peer.lease(r, 300, block=False) is not None


def _v03_lease(r):
    peer = V03Queue("q")
    for n in range(3):
        peer.add_item(r, f"{n}".encode())
    assert peer.lease(r, 300) is not None


@pytest.mark.parametrize("lease", [_v01_lease, _v03_lease], ids=["v0.1", "v0.3"])
def test_a_peers_live_lease_is_leased_and_the_abandoned_check_passes(cli, r, lease):
    lease(r)
    row = cli("stats", "q").one
    assert (row["pending"], row["processing"], row["leased"], row["abandoned"]) == (2, 1, 1, 0)
    run = cli("stats", "q", "--check", "--max-abandoned", "0")
    assert run.exit_code == 0, run
    # once the peer's lease key is gone (its worker died), the item is abandoned
    r.delete(*r.keys("q:lease:*"), *r.keys("q:leased_by_session:*"))
    assert cli("stats", "q").one["abandoned"] == 1
    run = cli("stats", "q", "--check", "--max-abandoned", "0")
    assert run.exit_code == 5 and "abandoned 1 > 0" in run.stderr


def test_peer_leases_past_the_first_page_are_counted_a_page_per_call(r):
    """More peer leases than one page of stats' read: the rest is read a page per call, and
    the abandoned ones (no lease key) at both ends and in the middle are still found."""
    n = 2 * LEASED_PAGE + 7
    abandoned = {0, LEASED_PAGE + 3, n - 1}
    pipe = r.pipeline(transaction=False)
    for i in range(n):
        pipe.set(f"q:item:{i}", b"x")
        pipe.lpush("q:processing", str(i))
        if i not in abandoned:
            pipe.set(f"q:lease:{i}", "peer-session", ex=300)
    pipe.execute()
    # and a lease of rq-cli's own (newest, at the left end), counted once
    q = WorkQueue(r, "q", session="host:1:own")
    q.push([NewItem(b"y", id="own")])
    assert [it.id for it in q.lease(lease_seconds=300)] == ["own"]
    stats = q.stats()
    assert stats.processing == n + 1
    assert (stats.leased, stats.abandoned) == (n + 1 - 3, 3)
