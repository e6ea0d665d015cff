"""``python -m bench.errgroups_probe URL [N]``: the bound on ``rq-cli errors``' server calls
(README "rq-cli errors"). Fills queue ``errbench`` with N dead items (default 1,000,000; five
causes, details varying) once, then walks ``P:dead_info`` with HSCAN at COUNT 100 and 250,
an O(1) HLEN between the calls as a control of what the machine's scheduling alone adds,
and prints the SLOWLOG durations of each command (median, p99, p99.9, max); then times
``group_errors`` itself. Use a server of its own: it sets ``slowlog-*`` and leaves the queue.
"""

from __future__ import annotations

import sys
import time

import redis

from rq_cli.core.contract.limits import ERRGROUP_SCAN_COUNT
from rq_cli.core.errgroups import group_errors
from rq_cli.core.queue import WorkQueue

P = "errbench"
FILL = r"""
local P, start, n = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local causes = {'connection refused: 10.0.%d.%d:6379', 'HTTP 502 from billing after %d.%ds',
  'job %08x%08x timed out', 'HTTP 503 from billing (attempt %d of %d)',
  'exit code 137 after %dms %d'}
for i = start, start + n - 1 do
  local id = string.format('d%08x', i)
  local err = string.format(causes[(i % 5) + 1], i % 251, i % 97)
  redis.call('SET', P .. ':dead_item:' .. id, '{"n":' .. i .. '}')
  redis.call('ZADD', P .. ':dead', 1795000000000 + i, id)
  redis.call('HSET', P .. ':dead_info', id, cjson.encode({reason = 'failed', attempts = 5,
    at = (1795000000000 + i) / 1000, error = err}))
end
return n
"""


def fill(r: redis.Redis, n: int) -> None:
    script = r.register_script(FILL)
    pipe = r.pipeline(transaction=False)
    for start in range(0, n, 2000):
        script(args=[P, start, min(2000, n - start)], client=pipe)
        if len(pipe) >= 8:
            pipe.execute()
    pipe.execute()


def durations(r: redis.Redis) -> dict[str, list[int]]:
    by: dict[str, list[int]] = {}
    for e in r.slowlog_get(100_000):
        by.setdefault(e["command"].split(b" ")[0].upper().decode(), []).append(e["duration"])
    return {c: sorted(d) for c, d in by.items()}


def line(name: str, d: list[int]) -> str:
    def at(p: float) -> float:
        return d[min(len(d) - 1, int(len(d) * p))] / 1000
    return (f"{name}: {len(d)} calls; median {at(.5):.3f} ms, p99 {at(.99):.2f} ms, "
            f"p99.9 {at(.999):.2f} ms, max {d[-1] / 1000:.2f} ms")


def main(url: str, n: int) -> None:
    r = redis.Redis.from_url(url)
    if r.hlen(f"{P}:dead_info") < n:
        t = time.monotonic()
        fill(r, n)
        print(f"filled {r.hlen(f'{P}:dead_info'):,} dead items in {time.monotonic() - t:.0f} s")
    r.config_set("slowlog-max-len", 100_000)
    for count in sorted({100, 250, ERRGROUP_SCAN_COUNT}):
        r.config_set("slowlog-log-slower-than", 0)
        r.slowlog_reset()
        cursor: int = 0
        while True:
            cursor, _ = r.hscan(f"{P}:dead_info", cursor, count=count)
            r.hlen(f"{P}:dead_info")
            if not cursor:
                break
        got = durations(r)
        print(line(f"HSCAN COUNT {count}", got["HSCAN"]))
        print(line("  HLEN (control)", got["HLEN"]))
    r.config_set("slowlog-log-slower-than", 0)
    r.slowlog_reset()
    t = time.monotonic()
    report = group_errors(WorkQueue(r, P))
    took = time.monotonic() - t
    print(f"group_errors: {report.scanned:,} items, {len(report.groups)} groups in {took:.0f} s; "
          + line("its HSCAN", durations(r)["HSCAN"]))
    r.config_set("slowlog-log-slower-than", 10_000)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000)
