"""requeue-dead into another queue from or into a sharded queue on a real 3-primary Cluster
(docs/DESIGN.md section 7, "Requeue across slots"; core/operations/crossmove.py): each dead item
lands in the target once, with its id and data, filtered or not, and a run stopped between the push
and the drop loses and doubles nothing when it runs again."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
import redis
from test_cluster import Cluster, cluster, nodes  # noqa: F401 (fixtures)

from rq_cli.connection.connect import connect
from rq_cli.core.contract.limits import SLOW_BATCH
from rq_cli.core.filtering import FilterReport, ItemFilter, scan
from rq_cli.core.queue import WorkQueue
from rq_cli.core.sharding.resharding import reshard
from rq_cli.core.sharding.sharded import ShardedQueue
from rq_cli.core.types import ItemRef, NewItem, QueueOptions

OPTS = QueueOptions(lease_seconds=30, grace_seconds=0)


@pytest.fixture
def rc(cluster: Cluster, nodes: list[redis.Redis]) -> Any:  # noqa: F811
    client = connect(cluster.url)
    yield client
    client.close()


def _sharded(rc: Any, base: str, n: int = 3) -> ShardedQueue:
    reshard(rc, base, n)
    return ShardedQueue(rc, base, OPTS, shards=n)


def _dead(q: Any, n: int, tag: str = "i") -> dict[str, bytes]:
    """``n`` dead items (cancelled), id -> data."""
    items = {f"{tag}{k}": b'{"user": "u%d", "n": %d}' % (k % 2, k) for k in range(n)}
    q.push([NewItem(d, i) for i, d in items.items()])
    assert {o.outcome for o in q.cancel(list(items))} == {"dead"}
    return items


def _drain(q: Any) -> Counter[tuple[str, bytes]]:
    """Lease and complete everything of ``q``: (id, data) -> times seen."""
    seen: Counter[tuple[str, bytes]] = Counter()
    while got := q.lease(100):
        seen.update((i.id, i.data) for i in got)
        q.complete([ItemRef(i.id, i.session) for i in got])
    return seen


@pytest.mark.parametrize("target", ["plain", "sharded"])
def test_every_dead_item_of_every_shard_moves_once(rc: Any, target: str) -> None:
    src = _sharded(rc, "app:{jobs}")
    to: Any = WorkQueue(rc, "app:{retry}", OPTS) if target == "plain" else \
        _sharded(rc, "app:{retry}", 2)
    items = _dead(src, 2 * SLOW_BATCH + 7)  # more than a batch in some shard
    assert sum(1 for s in src.shards if s.stats().dead) == 3  # spread over the shards
    dry = src.requeue_dead(to=to, dry_run=True)
    assert dry.requeued == len(items) and src.stats().dead == len(items)
    assert to.stats().pending == 0
    report = src.requeue_dead(to=to)
    assert (report.requeued, report.skipped, report.missing) == (len(items), 0, 0)
    assert sorted(report.ids) == sorted(items)
    assert src.stats().dead == 0 and src.stats().counters["requeued"] == len(items)
    assert _drain(to) == Counter(items.items())  # each once, with its id and data


def test_plain_into_sharded_routes_each_id_to_its_shard(rc: Any) -> None:
    src = WorkQueue(rc, "app:{jobs}", OPTS)
    to = _sharded(rc, "app:{retry}")
    items = _dead(src, 60)
    report = src.requeue_dead(to=to)
    assert report.requeued == 60 and src.stats().dead == 0
    for i in items:  # in the shard its id hashes to: operations by id find it
        assert to.item(i) is not None and to.shard_for(i).item(i) is not None
    assert _drain(to) == Counter(items.items())


def test_sharded_into_sharded_with_a_filter_and_ids(rc: Any) -> None:
    src = _sharded(rc, "app:{jobs}")
    to = _sharded(rc, "app:{retry}", 2)
    items = _dead(src, 40)
    report = FilterReport("jobs", "dead", "requeue")
    steps = list(scan(src, "dead", ItemFilter(match="user == 'u1'"), report,
                      action="requeue", to=to))
    assert report.done == 20 and sum(len(s.ids) for s in steps) == 20
    assert src.stats().dead == 20 and to.stats().pending == 20
    named = src.requeue_dead(["i0", "i2", "nope"], to=to)
    assert (named.requeued, named.missing) == (2, 1)
    assert src.requeue_dead(to=to, older_than=3600).requeued == 0  # all died just now
    left = src.requeue_dead(to=to, limit=5, older_than=0)
    assert left.requeued == 5 and src.stats().dead == 13
    seen = _drain(to)
    assert len(seen) == 27 and set(seen.values()) == {1}
    assert all(items[i] == d for i, d in seen)


def test_a_live_item_with_other_data_is_skipped(rc: Any) -> None:
    src = _sharded(rc, "app:{jobs}")
    to = WorkQueue(rc, "app:{retry}", OPTS)
    items = _dead(src, 10)
    to.push([NewItem(b"other", "i3")])  # a peer pushed the id again, with other data
    report = src.requeue_dead(to=to)
    assert (report.requeued, report.skipped, report.skipped_ids) == (9, 1, ["i3"])
    assert [p.id for p in src.peek("dead")] == ["i3"]  # it stays dead
    seen = _drain(to)
    assert seen[("i3", b"other")] == 1 and len(seen) == 10
    assert all(seen[(i, d)] == 1 for i, d in items.items() if i != "i3")


@pytest.mark.parametrize("target", ["plain", "sharded"])
def test_stopped_between_push_and_drop_then_run_again(rc: Any, target: str) -> None:
    src = _sharded(rc, "app:{jobs}")
    to: Any = WorkQueue(rc, "app:{retry}", OPTS) if target == "plain" else \
        _sharded(rc, "app:{retry}", 2)
    items = _dead(src, 3 * SLOW_BATCH)
    real_push, calls = to.push, []

    def push_then_stop(batch: Any, **kw: Any) -> Any:  # the real push, then Ctrl-C
        out = real_push(batch, **kw)
        calls.append(len(out))
        if len(calls) == 2:
            raise KeyboardInterrupt
        return out

    to.push = push_then_stop
    with pytest.raises(KeyboardInterrupt):
        src.requeue_dead(to=to)
    to.push = real_push
    pushed, first = sum(calls), calls[0]
    assert src.stats().dead == len(items) - first  # the second batch: pushed, still dead
    assert to.stats().pending == pushed
    again = src.requeue_dead(to=to)  # finds the second batch live with the same data
    assert again.requeued == len(items) - first and again.skipped == 0
    assert src.stats().dead == 0
    assert _drain(to) == Counter(items.items())  # 0 lost, 0 doubled


def test_a_concurrent_requeue_of_the_same_items_pushes_each_once(rc: Any) -> None:
    src = _sharded(rc, "app:{jobs}")
    to = _sharded(rc, "app:{retry}", 2)
    items = _dead(src, 30)
    real_push = to.push

    def other_run_first(batch: Any, **kw: Any) -> Any:  # the other run pushes just before
        real_push(batch, **kw)
        return real_push(batch, **kw)

    to.push = other_run_first
    report = src.requeue_dead(to=to)
    assert (report.requeued, report.skipped) == (30, 0) and src.stats().dead == 0
    to.push = real_push
    assert _drain(to) == Counter(items.items())
