"""The far end of a long processing list (issue 42): ``python -m bench.farend [in_flight
[settled]]``.

Leases ``in_flight`` items (default 1,000,000; 100 B each, ``lease(1000)`` calls) on a fresh
server (the bench's, Redis at /usr/bin/redis-server), then settles ``settled`` ids (default
1,000) per call: complete the newest (the left end, the far end from where an id's LREM
looked before issue 42), fail the next newest, complete the oldest, fail the next oldest;
each call's server time from SLOWLOG (every call logged), and the longest of any call
meanwhile. Budget: no call over 20 ms.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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
              f"{k:,} ids per call, {server.binary}")
        steps = (("complete the newest", "complete", leased[-k:]),
                 ("fail the next newest", "fail", leased[-2 * k:-k]),
                 ("complete the oldest", "complete", leased[:k]),
                 ("fail the next oldest", "fail", leased[k:2 * k]))
        worst = 0
        for name, how, items in steps:
            r.config_set("slowlog-log-slower-than", 0)
            r.config_set("slowlog-max-len", 1024)
            r.slowlog_reset()
            ids = [i.id for i in items]
            if how == "complete":
                q.complete(ids)
            else:
                q.fail(ids, retry_in=0)
            calls = r.slowlog_get(1024)
            longest = max(int(e["duration"]) for e in calls)
            worst = max(worst, longest)
            print(f"{name:24s} longest call {longest / 1000:8.1f} ms "
                  f"({len(calls)} calls logged)")
        print(f"longest call: {worst / 1000:.1f} ms (budget 20 ms): "
              f"{'PASS' if worst < 20_000 else 'FAIL'}")
    finally:
        r.close()
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
