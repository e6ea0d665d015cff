"""The far end of a long processing list (issue 42): ``python -m bench.farend [in_flight
[settled]]``.

Leases ``in_flight`` items (default 1,000,000; 100 B each, ``lease(1000)`` calls) on a fresh
server (the bench's, Redis at /usr/bin/redis-server), then settles ``settled`` ids (default
1,000) per request: complete the newest (the left end, the far end from where an id's LREM
looked before issue 42), fail the next newest, complete the oldest, fail the next oldest,
then extend, retake and release the next newest, release the next oldest, and
complete_and_lease (one lease) the next newest and the next oldest;
how many script calls each took (commandstats), the longest (SLOWLOG: calls of 1 ms or
more, tests/server_time.py) and the server's CPU time per call. Budget: no call over 20 ms.
"""

from __future__ import annotations

import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

from tests.server_time import spent
from tests.servers import ServerProcess

from .harness import server_binary


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    n = int(argv[0]) if argv else 1_000_000
    k = int(argv[1]) if len(argv) > 1 else 1000
    from rq_cli.core.queue import WorkQueue

    server = ServerProcess(Path(tempfile.mkdtemp(prefix="rq-farend-")),
                           binary=server_binary(None)).start()
    r = server.client()
    try:
        q = WorkQueue(r, "fq")
        started = time.monotonic()
        data = b'{"pad":"' + b"x" * 90 + b'"}'
        for _ in q.push_batches(data for _ in range(n)):
            pass
        leased: list[Any] = []
        while len(leased) < n:
            leased += q.lease(1000, lease_seconds=3600)
        print(f"{n:,} in flight (filled in {time.monotonic() - started:.0f} s), "
              f"{k:,} ids per request, {server.binary}")
        steps = (("complete the newest", "complete", leased[-k:]),
                 ("fail the next newest", "fail", leased[-2 * k:-k]),
                 ("complete the oldest", "complete", leased[:k]),
                 ("fail the next oldest", "fail", leased[k:2 * k]),
                 ("extend the newest", "extend", leased[-3 * k:-2 * k]),
                 ("retake the newest", "retake", leased[-3 * k:-2 * k]),
                 ("release the newest", "release", leased[-3 * k:-2 * k]),
                 ("release the next oldest", "release", leased[2 * k:3 * k]),
                 ("complete_and_lease newest", "complete_and_lease", leased[-4 * k:-3 * k]),
                 ("complete_and_lease oldest", "complete_and_lease", leased[3 * k:4 * k]))
        worst = 0
        for name, how, items in steps:
            ids = [i.id for i in items]
            call = partial(q.fail, ids, retry_in=0) if how == "fail" \
                else partial(getattr(q, how), ids)
            cost = spent(r, call)
            worst = max(worst, cost.longest_us)
            print(f"{name:24s} {cost.calls} script calls, longest "
                  f"{cost.longest_us / 1000:5.1f} ms (SLOWLOG), server CPU "
                  f"{cost.cpu_us / cost.calls / 1000:5.1f} ms a call")
        print(f"longest call: {worst / 1000:.1f} ms (budget 20 ms): "
              f"{'PASS' if worst < 20_000 else 'FAIL'}")
    finally:
        r.close()
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
