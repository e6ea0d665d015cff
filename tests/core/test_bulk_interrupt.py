"""A Ctrl-C in a bulk push (core/pushing/bulk.py ``stream``): the batches already sent are stored
whatever happens, so the stream yields each of them before it raises ``Drained``, and the
count a consumer keeps is exactly what was stored. A Ctrl-C can reach the consumer just after
a batch was handed to it and before it counted that batch (Python 3.10 runs signal handlers
between any two bytecodes): the stream hands that batch out again first."""

from __future__ import annotations

import pytest

from rq_cli.core.pushing import bulk
from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem

ITEMS = {
    "transactions": lambda n: b'{"n":%d}' % n,  # new random ids: one MULTI/EXEC per batch
    "push.lua": lambda n: NewItem(b"%d" % n, f"i{n}"),  # ids given: push.lua calls
}


@pytest.mark.parametrize("item", ITEMS.values(), ids=ITEMS.keys())
def test_a_ctrl_c_thrown_in_hands_out_the_last_batch_again_then_the_rest(r, item):
    wq = WorkQueue(r, "q")
    batches = bulk.stream(wq, (item(n) for n in range(20_000)), batch_size=1000)
    seen = [next(batches) for _ in range(3)]  # three handed out, with more sent ahead
    counted = seen[:2]  # the consumer stopped before counting the third
    again = batches.throw(KeyboardInterrupt())
    assert again is seen[2]
    drained = [again]
    with pytest.raises(bulk.Drained):
        while True:
            drained.append(next(batches))
    counted += drained
    # every batch once, in order, and all of them stored: the count is exact
    ids = [i for b in counted for i in b.ids]
    assert len(ids) == len(set(ids)) == r.llen(wq.keys.queue)
    assert len(ids) > 3000  # (batches were in flight when it stopped)
    stored = [i.id for i in wq.lease(len(ids))]
    assert stored == ids


def test_the_simple_path_too_hands_out_the_last_batch_again_then_stops_drained(r):
    """Tenant items take one call per batch, each waited for: a Ctrl-C thrown in where a
    batch was handed out finds nothing in flight, and the count is exact (Drained)."""
    wq = WorkQueue(r, "q")
    batches = bulk.stream(wq, (NewItem(b"%d" % n, f"i{n}") for n in range(5000)),
                          batch_size=1000, tenant="acme")
    seen = [next(batches) for _ in range(2)]
    assert batches.throw(KeyboardInterrupt()) is seen[1]
    with pytest.raises(bulk.Drained):
        next(batches)
    assert sum(len(b.ids) for b in seen) == r.llen(wq.keys.tenant_queue("acme")) == 2000


def test_a_ctrl_c_while_reading_the_first_batch_is_drained_with_nothing_stored(r):
    def lines():
        yield b"1"
        raise KeyboardInterrupt

    with pytest.raises(bulk.Drained):
        next(bulk.stream(WorkQueue(r, "q"), lines()))


@pytest.mark.parametrize("item", ITEMS.values(), ids=ITEMS.keys())
def test_a_stop_asked_between_batches_ends_the_stream_drained_with_every_batch_sent(r, item):
    """``stop`` (the CLI's: a signal was recorded) is asked before each batch is read: once
    it says so, the batches in flight are read and handed out, nothing more is sent, and
    the stream ends in Drained; what was handed out is exactly what was stored."""
    wq = WorkQueue(r, "q")
    handed: list[bulk.Pushed] = []
    batches = bulk.stream(wq, (item(n) for n in range(20_000)), batch_size=1000,
                          stop=lambda: len(handed) >= 2)
    with pytest.raises(bulk.Drained):
        for batch in batches:
            handed.append(batch)
    ids = [i for b in handed for i in b.ids]
    assert len(handed) > 2  # (the batches sent ahead were read after the stop)
    assert len(ids) == len(set(ids)) == r.llen(wq.keys.queue) < 20_000


def test_a_stop_on_the_simple_path_ends_it_drained_too(r):
    wq = WorkQueue(r, "q")
    handed: list[bulk.Pushed] = []
    with pytest.raises(bulk.Drained):
        for batch in bulk.stream(wq, (NewItem(b"%d" % n, f"i{n}") for n in range(5000)),
                                 batch_size=1000, tenant="acme",
                                 stop=lambda: len(handed) >= 2):
            handed.append(batch)
    assert len(handed) == 2 and r.llen(wq.keys.tenant_queue("acme")) == 2000


def test_an_interrupted_read_of_the_items_after_batches_were_sent_is_drained(r):
    """A KeyboardInterrupt raised by the items (the CLI's read of stdin, ended by a signal)
    while batches are in flight: they are read and handed out, then Drained."""
    def lines():
        for n in range(2500):
            yield b'{"n":%d}' % n
        raise KeyboardInterrupt  # (the third batch's read, two sent ahead)

    wq = WorkQueue(r, "q")
    handed = []
    with pytest.raises(bulk.Drained):
        for batch in bulk.stream(wq, lines(), batch_size=1000):
            handed.append(batch)
    assert sum(len(b.ids) for b in handed) == r.llen(wq.keys.queue) == 2000
