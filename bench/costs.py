"""What a script's pieces cost on the server: ``python -m bench.costs [calls]``.

Starts its own server (as the bench does) and times scratch scripts, each run ``calls``
times (default 5,000), best of three, by ``INFO commandstats`` ``usec_per_call``:

- an empty script call, as EVALSHA and as FCALL (the fixed cost of a call);
- 20 ``redis.call``s of a few kinds (EXISTS of a constant key, TYPE, HSET and HDEL with
  fresh arguments, HINCRBY), and 20 tables, string concatenations and number-to-string
  conversions, each alone after the empty call: the per-operation cost is the difference
  divided by 20;
- the engine's own ``lease`` on an empty queue (its fixed work: type checks, TIME, the
  paused and fair checks) as EVALSHA of the generated script and as FCALL of the library.

Figures are the server's execution time; they do not depend on the client. Only the
differences within one run mean much on a noisy machine.
"""

from __future__ import annotations

import sys
from typing import Any

from rq_cli.core.scripting.scripts import library, source
from tests.servers import ServerProcess, find_server_binary

_PIECES = {
    "empty": "return 1",
    "20 x EXISTS (constant key)": "for i=1,20 do redis.call('EXISTS','nokey') end return 1",
    "20 x TYPE": "for i=1,20 do redis.call('TYPE','h') end return 1",
    "20 x HSET (fresh field, number value)":
        "for i=1,20 do redis.call('HSET','h', ARGV[1]..':'..i, i+0.5) end return 1",
    "20 x HDEL (fresh field)": "for i=1,20 do redis.call('HDEL','h', ARGV[1]..':'..i) end "
                               "return 1",
    "20 x HINCRBY": "for i=1,20 do redis.call('HINCRBY','h','x',1) end return 1",
    "20 x a table {i, i}": "local t for i=1,20 do t={i,i} end return 1",
    "20 x a concatenation": "local t for i=1,20 do t=ARGV[1]..':'..i end return 1",
    "20 x tostring(number)": "local t for i=1,20 do t=tostring(i+0.5) end return 1",
}


def _best(client: Any, command: str, call: Any, calls: int) -> float:
    best = float("inf")
    for _ in range(3):
        client.config_resetstat()
        for _ in range(calls):
            call()
        best = min(best, float(client.info("commandstats")[f"cmdstat_{command}"]
                               ["usec_per_call"]))
    return best


def main(argv: list[str]) -> int:
    calls = int(argv[0]) if argv else 5000
    with ServerProcess(binary=find_server_binary()) as server:
        server.start()
        client = server.client()
        version = str(client.info("server")["redis_version"])
        functions = int(version.split(".")[0]) >= 7
        client.hset("h", "x", 1)
        print(f"server {server.binary} (redis_version {version}), {calls} calls each, "
              f"best of 3, us per call")
        empty = 0.0
        for label, body in _PIECES.items():
            sha = client.script_load(body)
            us = _best(client, "evalsha", lambda sha=sha: client.evalsha(sha, 1, "q", "abc"),
                       calls)
            if label == "empty":
                empty = us
                print(f"  EVALSHA, {label:38s} {us:6.2f}")
            else:
                print(f"  EVALSHA, {label:38s} {us:6.2f}  ({(us - empty) / 20:.2f} each)")
        if functions:
            client.function_load("#!lua name=rqcli_costs\nredis.register_function("
                                 "'rqcli_costs_empty', function(keys, args) return 1 end)")
            us = _best(client, "fcall",
                       lambda: client.fcall("rqcli_costs_empty", 1, "q", "abc"), calls)
            print(f"  FCALL,   {'empty':38s} {us:6.2f}")
        # the engine's lease on an empty queue: prefix q, server clock, compat layout; count
        # 1, lease 30 s, a session, no max attempts, not at most once
        args = ["q", "", "compat", "1", "30000", "s", "0", "0"]
        sha = client.script_load(source("lease"))
        us = _best(client, "evalsha", lambda: client.evalsha(sha, 1, "q:queue", *args), calls)
        print(f"  EVALSHA, {'lease.lua on an empty queue':38s} {us:6.2f}")
        if functions:
            lib = library()
            client.function_load(lib.code, replace=True)
            name = lib.functions["lease"]
            us = _best(client, "fcall", lambda: client.fcall(name, 1, "q:queue", *args), calls)
            print(f"  FCALL,   {'lease on an empty queue (library)':38s} {us:6.2f}")
        client.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
