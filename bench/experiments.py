"""What-if experiments behind the suggestions in the benchmark report: each one measures a
prototype of a proposed change side by side with the current code and the case's baseline,
in one run, so the expected gain is a measured ratio, not a guess. Prototypes live here only;
the real change belongs in rq_cli/.

    python -m bench.experiments push      # bulk push: send-ahead pipelining, cheaper ids
    python -m bench.experiments pushlua   # server-side cost of push.lua and its variants
    python -m bench.experiments lease     # lease+complete: one round trip per item
    python -m bench.experiments completelua  # server time of a batched complete
    python -m bench.experiments batchlua  # lease(100)+complete with multi-key Lua prototypes
    python -m bench.experiments maint     # purge/requeue-dead: server time per call, latency
    python -m bench.experiments deep      # deep clean: bigger SCAN/HSCAN pages, set updates
    python -m bench.experiments floor     # one at a time, 8 workers: what each guarantee costs
    python -m bench.experiments startup   # start-up: connection set-up cost (driver_info)
    python -m bench.experiments startup --typer PATH   # ... and rq-cli with another Typer

Each prints a small table and exits; ``--quick`` shrinks the sizes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from .fill import fill
from .harness import (
    BenchServer,
    cli_env,
    find_cli,
    log,
    median,
    pin_self,
    run_timed,
    server_binary,
    time_commands,
)


def _report(title: str, figures: dict[str, list[float]], base: str, unit: str,
            per: Callable[[float], float] = lambda x: x, ratio: str = "base/x") -> None:
    """Print medians and per-repetition ratios (``x/base`` or ``base/x``) to ``base``."""
    print(f"\n{title}")
    b = figures[base]
    for name, xs in figures.items():
        ratios = [(x / y) if ratio == "x/base" else (y / x) for x, y in zip(xs, b, strict=True)]
        print(f"  {name:<58} {per(median(xs)):>10.2f} {unit}   vs {base}: {median(ratios):.2f}x "
              f"({min(ratios):.2f}-{max(ratios):.2f})")


def _chunks(it: Iterable[Any], size: int) -> Iterator[list[Any]]:
    from itertools import islice

    it = iter(it)
    while chunk := list(islice(it, size)):
        yield chunk


# -- push ----------------------------------------------------------------------------------
def push_send_ahead(q: Any, lines: Iterable[bytes], *, depth: int = 2, batch: int = 1000,
                    bulk_ids: bool = False, results: bool = True) -> int:
    """Prototype of WorkQueue.push_batches with the next script call written to the socket
    before the previous reply is read, so the client prepares batch k+1 while the server
    runs batch k (the current code waits for each round trip before reading more input).

    JSON validation as the CLI does it (rq_cli.output.render.check_json) is included."""
    from rq_cli.core.types import PushResult
    from rq_cli.output.render import check_json

    client = q.client
    sha = client.script_load(q.script("push").script)
    keys = q.keys.script_keys
    head = [q.prefix, "", q.options.layout, "0", "0", "0"]
    conn = client.connection_pool.get_connection()
    inflight: deque[list[str]] = deque()
    stored = 0

    def collect() -> None:
        nonlocal stored
        ids = inflight.popleft()
        flags = conn.read_response()
        if isinstance(flags, bytes):
            flags = flags.decode()
        if results:
            [PushResult(i, f == "1") for i, f in zip(ids, flags, strict=True)]
        stored += len(ids)

    try:
        for chunk in _chunks(lines, batch):
            for line in chunk:
                check_json(line.decode("utf-8"))
            if bulk_ids:  # one urandom call per batch, sliced
                hexed = os.urandom(16 * len(chunk)).hex()
                ids = [hexed[i:i + 32] for i in range(0, 32 * len(chunk), 32)]
            else:
                ids = [os.urandom(16).hex() for _ in chunk]
            args: list[Any] = list(head)
            for item_id, data in zip(ids, chunk, strict=True):
                args.append(item_id)
                args.append(data)
            conn.send_packed_command(conn.pack_command("EVALSHA", sha, len(keys), *keys, *args),
                                     check_health=False)
            inflight.append(ids)
            if len(inflight) >= depth:
                collect()
        while inflight:
            collect()
    finally:
        client.connection_pool.release(conn)
    return stored


def exp_push(server: BenchServer, work: Path, quick: bool, reps: int) -> None:
    from rq_cli.core.queue import WorkQueue
    from rq_cli.output.render import check_json

    from .cases.push import QUEUE, jsonl_file, resp_file

    n = 100_000 if quick else 1_000_000
    src = jsonl_file(work, n)
    resp = resp_file(work, src, QUEUE)
    client = server.client()
    with open(src, "rb") as f:
        lines = [line.rstrip(b"\n") for line in f]

    def current() -> None:
        def validated() -> Iterator[bytes]:
            for line in lines:
                check_json(line.decode("utf-8"))
                yield line

        q = WorkQueue(client, QUEUE)
        for _ in q.push_batches(validated()):
            pass

    def proto(**kw: Any) -> Callable[[], None]:
        return lambda: push_send_ahead(WorkQueue(client, QUEUE), lines, **kw) and None

    def redis_cli() -> None:
        r = run_timed([shutil.which("redis-cli") or "redis-cli", "-p", str(server.port),
                       "--pipe"], stdin_path=resp)
        assert r.returncode == 0

    variants: dict[str, Callable[[], None]] = {
        "redis-cli --pipe (SET+LPUSH)": redis_cli,
        "current push_batches + check_json": current,
        "send-ahead depth 2": proto(depth=2),
        "send-ahead depth 2, bulk ids": proto(depth=2, bulk_ids=True),
        "send-ahead depth 3, bulk ids, no PushResult objects": proto(depth=3, bulk_ids=True,
                                                                     results=False),
    }
    times: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(reps):
        for name, fn in variants.items():
            server.flush()
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
            got = client.llen(f"{QUEUE}:queue")
            assert got == n, (name, got)
            log(f"{name}: {times[name][-1]:.2f} s")
    server.flush()
    _report(f"push {n:,} JSON lines (in-process, data already in memory): rate",
            {k: [n / t for t in v] for k, v in times.items()}, "redis-cli --pipe (SET+LPUSH)",
            "k items/s", per=lambda x: x / 1000, ratio="x/base")


def exp_pushlua(server: BenchServer, work: Path, quick: bool, reps: int) -> None:
    from rq_cli.core.queue import WorkQueue
    from rq_cli.core.scripting.scripts import source

    client = server.client()
    base = source("push")
    variants = {
        "push.lua as is": base,
        "without HSET P:enqueued": base.replace(
            "redis.call('HSET', K_ENQUEUED, unpack(stamped))", ""),
        "floor: SET + LPUSH only (no NX, no metadata)": """
local P = ARGV[1]
local ids = {}
for i = 7, #ARGV, 2 do
  redis.call('SET', P .. ':item:' .. ARGV[i], ARGV[i + 1])
  ids[#ids + 1] = ARGV[i]
end
redis.call('LPUSH', P .. ':queue', unpack(ids))
return 1
""",
    }
    n = 50_000 if quick else 200_000
    q = WorkQueue(client, "xq")
    keys = q.keys.script_keys
    shas = {k: client.script_load(v) for k, v in variants.items()}
    lines = [b'{"n":%d,"user":"user-1","action":"send-email","body":"lorem ipsum dolor sit amet"}'
             % i for i in range(n)]
    per_item: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(reps):
        for name, sha in shas.items():
            server.flush()
            client.config_resetstat()
            for i in range(0, n, 1000):
                args: list[Any] = [q.prefix, "", "compat", "0", "0", "0"]
                for line in lines[i:i + 1000]:
                    args += [os.urandom(16).hex(), line]
                client.evalsha(sha, len(keys), *keys, *args)
            per_item[name].append(client.info("commandstats")["cmdstat_evalsha"]["usec"] / n)
    server.flush()
    _report(f"push.lua server time per item (INFO commandstats, {n:,} items, batches of 1000)",
            per_item, "push.lua as is", "us/item")


# -- lease ---------------------------------------------------------------------------------
def exp_lease(server: BenchServer, work: Path, quick: bool, reps: int) -> None:
    import multiprocessing as mp

    from .cases import lease as L

    def piggyback_worker(port: int, quota: int, batch: int, go: Any, out: Any) -> None:
        """Prototype: complete the previous item and lease the next in ONE round trip (the two
        scripts pipelined; each stays atomic). The loop a worker API would run."""
        import redis

        from rq_cli.core.queue import WorkQueue

        c = redis.Redis(host="127.0.0.1", port=port)
        q = WorkQueue(c, L.RQ_Q)
        lease, complete = q.script("lease"), q.script("complete")
        c.script_load(lease.script)
        c.script_load(complete.script)
        keys = q.keys.script_keys  # computed once, not per call
        head = [q.prefix, "", q.options.layout]
        lease_args = [*head, 1, 300_000, q.session, q.options.max_attempts]
        go.wait()
        t0 = time.perf_counter()
        done = 0
        prev: Any = None
        while True:
            pipe = c.pipeline(transaction=False)
            if prev is not None:
                pipe.evalsha(complete.sha, len(keys), *keys, *head, prev, q.session)
            if done < quota:
                pipe.evalsha(lease.sha, len(keys), *keys, *lease_args)
            replies = pipe.execute()
            if prev is not None:
                done += replies[0] in (b"C", "C")
                replies = replies[1:]
            if not replies or len(replies[0]) <= 3:
                break
            prev = replies[0][3]
        out.put((done, t0, time.perf_counter()))

    def combined_worker(port: int, quota: int, batch: int, go: Any, out: Any) -> None:
        """Prototype: ONE script call per item that completes the previous item, then leases
        the next (complete's logic for one id in front of lease.lua, atomically)."""
        import redis

        from rq_cli.core.queue import WorkQueue

        c = redis.Redis(host="127.0.0.1", port=port)
        q = WorkQueue(c, L.RQ_Q)
        sha = c.script_load(combined_source())
        keys = q.keys.script_keys
        head = [q.prefix, "", q.options.layout]
        go.wait()
        t0 = time.perf_counter()
        done = 0
        prev: Any = b""
        while True:
            count = 1 if done + (1 if prev else 0) < quota else 0  # the last call only completes
            reply = c.evalsha(sha, len(keys), *keys, *head, prev, q.session if prev else "",
                              count, 300_000, q.session, q.options.max_attempts)
            done += reply[-1] in (b"C", "C")
            if len(reply) <= 4:
                break
            prev = reply[3]
        out.put((done, t0, time.perf_counter()))

    port = server.port
    client = server.client()
    n1, n4, np_ = (2_000, 4_000, 800) if quick else (8_000, 16_000, 3_000)
    plans = {
        "peer, 1 process": (L._peer_worker, L.PEER_Q, "peer_pending", 1, np_),
        "current lease+complete, 1 process": (L._rq_worker, L.RQ_Q, "pending", 1, n1),
        "piggyback (1 round trip/item), 1 process": (piggyback_worker, L.RQ_Q, "pending", 1, n1),
        "combined script (1 call/item), 1 process": (combined_worker, L.RQ_Q, "pending", 1, n1),
        "peer, 4 processes": (L._peer_worker, L.PEER_Q, "peer_pending", 4, 2 * np_),
        "current lease+complete, 4 processes": (L._rq_worker, L.RQ_Q, "pending", 4, n4),
        "piggyback, 4 processes": (piggyback_worker, L.RQ_Q, "pending", 4, n4),
        "combined script, 4 processes": (combined_worker, L.RQ_Q, "pending", 4, n4),
    }
    ctx = mp.get_context("fork")
    rates: dict[str, list[float]] = {k: [] for k in plans}
    for _ in range(reps):
        for name, (target, prefix, kind, procs, n) in plans.items():
            server.flush()
            fill(client, prefix, kind, n)
            go, out = ctx.Event(), ctx.Queue()
            ws = [ctx.Process(target=target, args=(port, n // procs, 1, go, out))
                  for _ in range(procs)]
            for w in ws:
                w.start()
            time.sleep(0.3)
            go.set()
            res = [out.get(timeout=600) for _ in ws]
            for w in ws:
                w.join(30)
            done = sum(r[0] for r in res)
            rates[name].append(done / (max(r[2] for r in res) - min(r[1] for r in res)))
            log(f"{name}: {rates[name][-1]:,.0f} items/s")
    server.flush()
    for p in ("1 process", "4 processes"):
        _report(f"lease+complete one at a time, {p}",
                {k: v for k, v in rates.items() if k.endswith(p)}, f"peer, {p}", "items/s",
                ratio="x/base")


def combined_source() -> str:
    """complete (one id) + lease in one script: ARGV[4] id to complete ('' = none),
    ARGV[5] its session, ARGV[6..9] lease's own ARGV[4..7]. Returns lease's reply with the
    complete outcome ('C', 'M', 'X' or '') appended."""
    from importlib import resources

    lua = resources.files("rq_cli") / "lua"
    common = (lua / "_common.lua").read_text()
    body = (lua / "lease.lua").read_text()
    for old, new in (("ARGV[7]", "ARGV[9]"), ("ARGV[6]", "ARGV[8]"), ("ARGV[5]", "ARGV[7]"),
                     ("ARGV[4]", "ARGV[6]")):
        body = body.replace(old, new)
    body = body.replace("return {1, 0, -1}", "return {1, 0, -1, c_res}")
    body = body.replace("return out", "out[#out + 1] = c_res\nreturn out")
    complete_one = """
local c_res = ''
if ARGV[4] ~= '' then
  local id, session = ARGV[4], ARGV[5]
  local holder = lease_holder(id)
  if session ~= '' and holder and holder ~= session then
    c_res = 'X'
  elseif redis.call('DEL', item_key(id)) == 1 then
    del_lease(id)
    unlist(id)
    drop_meta(id)
    count('completed', 1)
    c_res = 'C'
  else
    c_res = 'M'
  end
end
"""
    return common + "\n" + complete_one + body


BATCHED_COMPLETE = """
-- complete.lua with the per-item bookkeeping deletes made variadic: per id only the lease
-- check, the DEL of the data and the LREM from processing; the rest once per call.
local res, done_ids = {}, {}
for i = 4, #ARGV, 2 do
  local id, session = ARGV[i], ARGV[i + 1]
  local holder = lease_holder(id)
  if session ~= '' and holder and holder ~= session then
    res[#res + 1] = 'X'
  elseif redis.call('DEL', item_key(id)) == 1 then
    unlist(id)
    done_ids[#done_ids + 1] = id
    res[#res + 1] = 'C'
  else
    res[#res + 1] = 'M'
  end
end
local n = #done_ids
if n > 0 then
  local lease_keys = {}
  for i, id in ipairs(done_ids) do
    lease_keys[2 * i - 1] = lease_key(id)
    lease_keys[2 * i] = lbs_key(id)
  end
  redis.call('DEL', unpack(lease_keys))
  redis.call('ZREM', K_LEASES, unpack(done_ids))
  redis.call('HDEL', K_ATTEMPTS, unpack(done_ids))
  redis.call('HDEL', K_ENQUEUED, unpack(done_ids))
  redis.call('HDEL', K_ERRORS, unpack(done_ids))
  redis.call('HDEL', K_SUSPECTS, unpack(done_ids))
  redis.call('ZREM', K_EXPIRES, unpack(done_ids))
end
count('completed', n)
return table.concat(res)
"""


BATCHED_LEASE = """
-- lease.lua with the per-item reads made multi-key (RPOP count, MGET, ZMSCORE, HMGET) and the
-- per-item writes other than the lease keys made variadic (HSET, LPUSH, ZADD, HDEL).
if redis.call('EXISTS', K_PAUSED) == 1 then return {1, 0, -1} end
local want = tonumber(ARGV[4])
local ms = tonumber(ARGV[5])
local session = ARGV[6]
local max_attempts = tonumber(ARGV[7])
promote_due(1000)
local out = {0, NOW + ms, -1}
local taken, budget = 0, want + 1000
local got, att_args, lease_args, seen = {}, {}, {}, {}
while taken < want and budget > 0 do
  local ids = redis.call('RPOP', K_QUEUE, math.min(want - taken, budget))
  if not ids then break end
  budget = budget - #ids
  local ik, lk, bk = {}, {}, {}
  for i, id in ipairs(ids) do
    ik[i] = item_key(id); lk[i] = lease_key(id); bk[i] = lbs_key(id)
  end
  local datas = redis.call('MGET', unpack(ik))
  local h3 = WRITE_V3 and redis.call('MGET', unpack(lk)) or {}
  local h1 = WRITE_V1 and redis.call('MGET', unpack(bk)) or {}
  local exps = redis.call('ZMSCORE', K_EXPIRES, unpack(ids))
  local atts = redis.call('HMGET', K_ATTEMPTS, unpack(ids))
  for i, id in ipairs(ids) do
    local data = datas[i]
    if not data then
      drop_meta(id)
    elseif h3[i] or h1[i] or seen[id] then
      -- held already (or a second copy in this call)
    else
      local exp, a = tonumber(exps[i]), tonumber(atts[i]) or 0
      if exp and exp <= NOW then
        dead_letter(id, 'expired')
      elseif max_attempts > 0 and a >= max_attempts then
        dead_letter(id, 'max_attempts')
      else
        seen[id] = true
        a = a + 1
        att_args[#att_args + 1] = id; att_args[#att_args + 1] = a
        lease_args[#lease_args + 1] = NOW + ms; lease_args[#lease_args + 1] = id
        got[#got + 1] = id
        if WRITE_V3 then redis.call('SET', lease_key(id), session, 'PX', ms) end
        if WRITE_V1 then redis.call('SET', lbs_key(id), session, 'PX', ms) end
        taken = taken + 1
        out[#out + 1] = id; out[#out + 1] = data; out[#out + 1] = a
      end
    end
  end
end
if taken > 0 then
  redis.call('HSET', K_ATTEMPTS, unpack(att_args))
  redis.call('LPUSH', K_PROCESSING, unpack(got))
  redis.call('ZADD', K_LEASES, unpack(lease_args))
  redis.call('HDEL', K_SUSPECTS, unpack(got))
end
count('leased', taken)
if taken == 0 then
  local first = redis.call('ZRANGE', K_DELAYED, 0, 0, 'WITHSCORES')
  if first[2] then out[3] = tonumber(first[2]) end
end
return out
"""


def exp_batchlua(server: BenchServer, work: Path, quick: bool, reps: int) -> None:
    """lease(count=100) + batched complete, 1 process: the scripts as they are vs the
    prototypes above, against the peer's one-at-a-time rate, side by side."""
    from importlib import resources

    from rq_cli.core.queue import WorkQueue
    from rq_cli.core.scripting.scripts import source

    from .cases import lease as L

    client = server.client()
    common = (resources.files("rq_cli") / "lua" / "_common.lua").read_text()
    scripts = {
        "current scripts": (source("lease"), source("complete")),
        "batched complete only": (source("lease"), common + "\n" + BATCHED_COMPLETE),
        "batched lease + batched complete": (common + "\n" + BATCHED_LEASE,
                                             common + "\n" + BATCHED_COMPLETE),
    }
    n, np_ = (20_000, 800) if quick else (100_000, 3_000)
    q = WorkQueue(client, L.RQ_Q)
    keys = q.keys.script_keys
    head = [q.prefix, "", q.options.layout]
    rates: dict[str, list[float]] = {"peer, 1 at a time": []}
    rates.update({k: [] for k in scripts})
    server_us: dict[str, list[float]] = {k: [] for k in scripts}
    import multiprocessing as mp

    for _ in range(reps):
        server.flush()
        fill(client, L.PEER_Q, "peer_pending", np_)
        ctx = mp.get_context("fork")
        go, out = ctx.Event(), ctx.Queue()
        w = ctx.Process(target=L._peer_worker, args=(server.port, np_, 1, go, out))
        w.start()
        time.sleep(0.3)
        go.set()
        done, t0, t1 = out.get(timeout=600)
        w.join(30)
        rates["peer, 1 at a time"].append(done / (t1 - t0))
        for name, (lease_src, complete_src) in scripts.items():
            server.flush()
            fill(client, L.RQ_Q, "pending", n)
            ls, cs = client.script_load(lease_src), client.script_load(complete_src)
            client.config_resetstat()
            done = 0
            t0 = time.perf_counter()
            while True:
                r = client.evalsha(ls, len(keys), *keys, *head, 100, 300_000, q.session,
                                   q.options.max_attempts)
                if len(r) <= 3:
                    break
                args: list[Any] = list(head)
                for i in range(3, len(r), 3):
                    args += [r[i], q.session]
                flags = client.evalsha(cs, len(keys), *keys, *args)
                done += flags.count(b"C" if isinstance(flags, bytes) else "C")
            dt = time.perf_counter() - t0
            assert done == n, (name, done)
            rates[name].append(n / dt)
            server_us[name].append(client.info("commandstats")["cmdstat_evalsha"]["usec"] / n)
            log(f"{name}: {n / dt:,.0f} items/s, server {server_us[name][-1]:.1f} us/item")
    server.flush()
    _report("lease(count=100) + batched complete, 1 process (raw evalsha loop)", rates,
            "peer, 1 at a time", "items/s", ratio="x/base")
    _report("server time per item (INFO commandstats)", server_us, "current scripts",
            "us/item")


def exp_completelua(server: BenchServer, work: Path, quick: bool, reps: int) -> None:
    from importlib import resources

    from rq_cli.core.queue import WorkQueue
    from rq_cli.core.scripting.scripts import source

    client = server.client()
    common = (resources.files("rq_cli") / "lua" / "_common.lua").read_text()
    shas = {"complete.lua as is": client.script_load(source("complete")),
            "complete.lua, bookkeeping deletes variadic": client.script_load(
                common + "\n" + BATCHED_COMPLETE)}
    n = 20_000 if quick else 100_000
    q = WorkQueue(client, "kq")
    keys = q.keys.script_keys
    lease_us: list[float] = []
    per_item: dict[str, list[float]] = {k: [] for k in shas}
    for _ in range(reps):
        for name, sha in shas.items():
            server.flush()
            fill(client, "kq", "pending", n)
            client.config_resetstat()
            leased = []
            while batch := q.lease(100):
                leased.append(batch)
            lease_us.append(client.info("commandstats")["cmdstat_evalsha"]["usec"] / n)
            client.config_resetstat()
            for batch in leased:
                args: list[Any] = [q.prefix, "", q.options.layout]
                for item in batch:
                    args += [item.id, item.session]
                flags = client.evalsha(sha, len(keys), *keys, *args)
                assert set(flags) == {ord("C")} or set(flags) == {"C"}, flags[:10]
            per_item[name].append(client.info("commandstats")["cmdstat_evalsha"]["usec"] / n)
    server.flush()
    print(f"\nlease(100) server time per item: {median(lease_us):.2f} us (lease.lua as is)")
    _report(f"complete of batches of 100: server time per item ({n:,} items)", per_item,
            "complete.lua as is", "us/item")


# -- purge / requeue-dead: server time per call ----------------------------------------------
VARIADIC_PURGE_PENDING = """
-- purge.lua's 'pending' step with one command per kind instead of ~9 per item.
-- ARGV[4] batch size. Returns how many ids were popped.
local ids = redis.call('RPOP', K_QUEUE, tonumber(ARGV[4]))
if not ids then return 0 end
local ik, lk, bk = {}, {}, {}
for i, id in ipairs(ids) do
  ik[i] = item_key(id); lk[i] = lease_key(id); bk[i] = lbs_key(id)
end
local h3 = WRITE_V3 and redis.call('MGET', unpack(lk)) or {}
local h1 = WRITE_V1 and redis.call('MGET', unpack(bk)) or {}
local gone, keys = {}, {}
for i, id in ipairs(ids) do
  if not (h3[i] or h1[i]) then gone[#gone + 1] = id; keys[#keys + 1] = ik[i] end
end
if #gone > 0 then
  redis.call('UNLINK', unpack(keys))
  redis.call('HDEL', K_ATTEMPTS, unpack(gone))
  redis.call('HDEL', K_ENQUEUED, unpack(gone))
  redis.call('HDEL', K_ERRORS, unpack(gone))
  redis.call('HDEL', K_SUSPECTS, unpack(gone))
  redis.call('ZREM', K_EXPIRES, unpack(gone))
  redis.call('ZREM', K_LEASES, unpack(gone))
end
return #ids
"""

VARIADIC_REQUEUE_ALL = """
-- requeue_dead.lua's 'range' mode (target = this queue) with multi-key reads and variadic
-- writes. ARGV[4] batch size. Returns {requeued, skipped, missing}.
local ids = redis.call('ZRANGEBYSCORE', K_DEAD, '-inf', '+inf', 'LIMIT', 0, tonumber(ARGV[4]))
if #ids == 0 then return {0, 0, 0} end
local dk, tk = {}, {}
for i, id in ipairs(ids) do dk[i] = dead_item_key(id); tk[i] = item_key(id) end
local datas = redis.call('MGET', unpack(dk))
local live = redis.call('MGET', unpack(tk))
local mset, moved, stamps, gone = {}, {}, {}, {}
local out = {0, 0, 0}
for i, id in ipairs(ids) do
  if not datas[i] then
    out[3] = out[3] + 1; gone[#gone + 1] = id
  elseif live[i] then
    out[2] = out[2] + 1
  else
    out[1] = out[1] + 1
    mset[#mset + 1] = tk[i]; mset[#mset + 1] = datas[i]
    moved[#moved + 1] = id; gone[#gone + 1] = id
    stamps[#stamps + 1] = id; stamps[#stamps + 1] = NOW
  end
end
if #moved > 0 then
  redis.call('MSET', unpack(mset))
  redis.call('LPUSH', K_QUEUE, unpack(moved))
  redis.call('HSET', K_ENQUEUED, unpack(stamps))
  redis.call('HDEL', K_ATTEMPTS, unpack(moved))
  local keys = {}
  for i, id in ipairs(moved) do keys[i] = dead_item_key(id) end
  redis.call('UNLINK', unpack(keys))
end
if #gone > 0 then
  redis.call('ZREM', K_DEAD, unpack(gone))
  redis.call('HDEL', K_DEAD_INFO, unpack(gone))
end
count('requeued', out[1])
return out
"""


def exp_maint(server: BenchServer, work: Path, quick: bool, reps: int) -> None:
    """purge('all') of N pending and requeue_dead() of N dead: the scripts as they are
    (BATCH 1000, and BATCH 200), and variadic prototypes (batch 1000): total time, worst PING
    of a second client, the server time per script call and the longest call (SLOWLOG)."""
    from importlib import resources

    import rq_cli.core.queue as qmod
    from rq_cli.core.queue import WorkQueue

    from .harness import Prober

    n = 100_000 if quick else 1_000_000
    client = server.client()
    q = WorkQueue(client, "mq")
    keys = q.keys.script_keys
    head = [q.prefix, "", q.options.layout]
    common = (resources.files("rq_cli") / "lua" / "_common.lua").read_text()
    purge_sha = client.script_load(common + "\n" + VARIADIC_PURGE_PENDING)
    requeue_sha = client.script_load(common + "\n" + VARIADIC_REQUEUE_ALL)

    def with_batch(size: int, fn: Callable[[], Any]) -> Callable[[], Any]:
        def run() -> Any:
            saved, qmod.BATCH = qmod.BATCH, size
            try:
                return fn()
            finally:
                qmod.BATCH = saved
        return run

    def proto_purge() -> None:
        while int(client.evalsha(purge_sha, len(keys), *keys, *head, 1000)):
            pass
        q.purge("all")  # what is left: the other states (empty here), strays, bookkeeping

    def proto_requeue() -> None:
        while int(client.evalsha(requeue_sha, len(keys), *keys, *head, 1000)[0]):
            pass

    plans = [
        ("purge all, BATCH 1000 (as is)", "pending", lambda: q.purge("all")),
        ("purge all, BATCH 200", "pending", with_batch(200, lambda: q.purge("all"))),
        ("purge all, variadic prototype, 1000/call", "pending", proto_purge),
        ("requeue-dead all, BATCH 1000 (as is)", "dead", lambda: q.requeue_dead()),
        ("requeue-dead all, BATCH 200", "dead", with_batch(200, lambda: q.requeue_dead())),
        ("requeue-dead all, variadic prototype, 1000/call", "dead", proto_requeue),
    ]
    rows: dict[str, list[dict[str, float]]] = {name: [] for name, _, _ in plans}
    for _ in range(reps):
        for name, kind, fn in plans:
            server.flush()
            fill(client, "mq", kind, n)
            client.config_set("slowlog-log-slower-than", 5000)
            client.config_set("slowlog-max-len", 10000)
            client.slowlog_reset()
            client.config_resetstat()
            with Prober("127.0.0.1", server.port) as p:
                t0 = time.perf_counter()
                fn()
                dt = time.perf_counter() - t0
                ping = p.stop()
            if kind == "dead":
                assert client.llen("mq:queue") == n, name
            ev = client.info("commandstats").get("cmdstat_evalsha", {})
            slow = [e["duration"] for e in client.slowlog_get(10000)
                    if str(e["command"]).startswith(("EVALSHA", "b'EVALSHA"))]
            rows[name].append({"s": dt, "worst_ping_ms": ping["max_ms"],
                               "p99_ping_ms": ping["p99_ms"],
                               "ms_per_call": ev.get("usec_per_call", 0) / 1000,
                               "longest_call_ms": max(slow, default=0) / 1000})
            log(f"{name}: {rows[name][-1]}")
    server.flush()
    print(f"\npurge / requeue-dead of {n:,} items (medians over {reps} runs)")
    print(f"  {'':<50} {'time s':>7} {'worst PING':>11} {'p99 PING':>9} "
          f"{'ms/call':>8} {'longest call':>13}")
    for name, rs in rows.items():
        def m(key: str, rs: list[dict[str, float]] = rs) -> float:
            return median(r[key] for r in rs)
        print(f"  {name:<50} {m('s'):>7.2f} {m('worst_ping_ms'):>8.1f} ms {m('p99_ping_ms'):>6.1f}"
              f" ms {m('ms_per_call'):>8.2f} {m('longest_call_ms'):>10.1f} ms")


# -- deep clean ----------------------------------------------------------------------------
def fast_candidates(q: Any, scan_count: int = 5000, hscan_count: int = 10000,
                    skip_enqueued: bool = False) -> tuple[set[bytes], set[bytes]]:
    """Prototype of deep.py's discovery: SCAN pages added to the set whole (no per-key
    generator), larger COUNTs (each call still a few ms), and the bookkeeping sweep as set
    differences on whole pages. Returns (stray candidates, stale metadata ids)."""
    from rq_cli.core.operations import deep

    client, k = q.client, q.keys
    off = k.item_key_offset
    items: set[bytes] = set()
    cursor = 0
    while True:
        cursor, keys = client.scan(cursor, match=k.item_pattern, count=scan_count)
        items.update(key[off:] for key in keys)
        if not cursor:
            break
    candidates = items - deep._listed(q)
    meta: set[bytes] = set()
    for name in deep._META_HASHES:
        if skip_enqueued and name == "enqueued" and \
                client.hlen(k.enqueued) <= len(items) + client.zcard(k.dead):
            continue  # no more fields than items: sweep it only when it has outgrown them
        cursor = 0
        while True:
            cursor, page = client.hscan(getattr(k, name), cursor, count=hscan_count)
            meta.update(page)  # dict keys: the fields
            if not cursor:
                break
    for name in deep._META_ZSETS:
        for member, _ in client.zscan_iter(getattr(k, name), count=hscan_count):
            meta.add(member)
    stale = meta - items
    if stale:
        stale -= {m for m, _ in client.zscan_iter(k.dead, count=hscan_count)}
    return candidates, stale


def exp_deep(server: BenchServer, work: Path, quick: bool, reps: int) -> None:
    from rq_cli.core.queue import WorkQueue

    n = 100_000 if quick else 1_000_000
    client = server.client()
    q = WorkQueue(client, "dq")
    server.flush()
    fill(client, "dq", "pending", n, stray_every=100)

    def scan() -> None:
        assert sum(1 for _ in client.scan_iter(match="dq:item:*", count=1000)) == n

    def current_discovery() -> None:
        from rq_cli.core.operations import deep

        items = set(q.scan_items())
        cands = items - deep._listed(q)
        dead = {m for m, _ in client.zscan_iter(q.keys.dead, count=1000)}
        stale = {i for i in deep._meta_ids(q) if i not in items and i not in dead}
        assert len(cands) == n // 100 and not stale

    def proto() -> None:
        cands, stale = fast_candidates(q)
        assert len(cands) == n // 100 and not stale

    def proto_skip() -> None:
        cands, stale = fast_candidates(q, skip_enqueued=True)
        assert len(cands) == n // 100 and not stale

    def phase_scan() -> None:
        set(q.scan_items())

    def phase_lists() -> None:
        from rq_cli.core.operations import deep

        deep._listed(q)

    def phase_meta() -> None:
        from rq_cli.core.operations import deep

        for _ in deep._meta_ids(q):
            pass

    def current_full() -> None:
        r = q.clean(deep=True, grace_seconds=0, dry_run=True)
        assert r.recovered == n // 100

    variants = {"bare SCAN COUNT 1000": scan, "current deep clean (dry run)": current_full,
                "current discovery (scan+lists+meta sweep)": current_discovery,
                "  phase: SCAN P:item:* into a set (scan_items)": phase_scan,
                "  phase: read the lists (_listed)": phase_lists,
                "  phase: bookkeeping sweep (_meta_ids, HSCAN)": phase_meta,
                "prototype discovery (pages, COUNT 5000/10000)": proto,
                "prototype + sweep P:enqueued only when outgrown": proto_skip}
    times: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(reps):
        for name, fn in variants.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
            log(f"{name}: {times[name][-1]:.2f} s")
    server.flush()
    _report(f"deep clean discovery over {n:,} items (1% strays): time, ratio to bare SCAN",
            times, "bare SCAN COUNT 1000", "s", ratio="x/base")


# -- start-up ------------------------------------------------------------------------------
def exp_startup(server: BenchServer, work: Path, quick: bool, reps: int,
                typer_path: str | None) -> None:
    env = cli_env(server.url, work)
    cli, reason = find_cli(env, work)
    if not cli:
        raise SystemExit(f"rq-cli not available: {reason}")
    py = sys.executable
    port = server.port
    cmds = {"python -c 'import redis'": [py, "-c", "import redis"],
            "rq-cli push q '{}'": [cli, "push", "uq", "{}"],
            "rq-cli --version": [cli, "--version"],
            "python -c 'import redis, typer'": [py, "-c", "import redis, typer"],
            "import redis; Redis().ping() (default: CLIENT SETINFO x2)": [
                py, "-c", f"import redis; redis.Redis(port={port}).ping()"],
            "import redis; Redis(driver_info=None).ping()": [
                py, "-c", f"import redis; redis.Redis(port={port}, driver_info=None).ping()"]}
    if typer_path:
        cmds["rq-cli push q '{}' (other Typer)"] = ["env", f"PYTHONPATH={typer_path}", cli,
                                                   "push", "uq", "{}"]
        cmds["python -c 'import redis, typer' (other Typer)"] = [
            "env", f"PYTHONPATH={typer_path}", py, "-c", "import redis, typer"]
    times, cpu, tool = time_commands(cmds, rounds=reps, runs=5 if quick else 15, env=env,
                                     cwd=work)
    _report(f"start-up wall time ({tool}), ratio to import redis",
            {k: [median(r) for r in v] for k, v in times.items()}, "python -c 'import redis'",
            "ms", per=lambda x: x * 1000, ratio="x/base")
    _report("start-up CPU time (user+sys), ratio to import redis", cpu,
            "python -c 'import redis'", "ms", per=lambda x: x * 1000, ratio="x/base")


# -- floor: one at a time, what each guarantee costs the server -------------------------------
#: The least a peer-compatible worker's step can do in one round trip: complete the last
#: item (read its lease keys, delete its data and both lease keys, take it out of processing)
#: and lease the next (RPOP, read its data and lease keys, set both lease keys, into
#: processing). No attempts, deadlines, holders, counters, type checks or clock.
FLOOR_LIBRARY = r"""#!lua name=rqfloor
redis.register_function('rqfloor', function(keys, args)
  local p, session, px, done = args[1], args[2], args[3], args[4]
  if done ~= '' then
    local v3, v1 = p .. ':lease:' .. done, p .. ':leased_by_session:' .. done
    redis.call('MGET', v3, v1)
    if redis.call('DEL', p .. ':item:' .. done, v3, v1) > 0 then
      redis.call('LREM', p .. ':processing', '-1', done)
    end
  end
  local ids = redis.call('RPOP', keys[1], 1)
  if not ids then return false end
  local id = ids[1]
  local v3, v1 = p .. ':lease:' .. id, p .. ':leased_by_session:' .. id
  local got = redis.call('MGET', p .. ':item:' .. id, v3, v1)
  redis.call('SET', v3, session, 'PX', px)
  redis.call('SET', v1, session, 'PX', px)
  redis.call('LPUSH', p .. ':processing', id)
  return {id, got[1]}
end)
"""


def _floor_worker(loop: str, port: int, quota: int, go: Any, out: Any) -> None:
    """scale._worker's contract, for the loop ``floor``: FLOOR_LIBRARY's step per item."""
    import redis

    from .cases.scale import Q, _unpin

    _unpin()
    c = redis.Redis(host="127.0.0.1", port=port)
    c.ping()
    go.wait()
    t0, done, last = time.perf_counter(), 0, b""
    while True:
        got = c.fcall("rqfloor", 1, f"{Q}:queue", Q, f"s{os.getpid()}", "300000", last)
        done += 1 if last else 0
        if not got:
            break
        last = got[0]
    out.put((done, t0, time.perf_counter()))


def _without(code: str, *parts: str) -> str:
    """The Functions library's text without the steps named (prototypes of leaner scripts):
    "types" (the TYPE checks; the EXISTS of the rare keys stays), "counters" (the one-item
    paths' counters and de-dup window read), "holders" (P:holders)."""
    edits = {
        "types": [("redis.call('TYPE', checks[i])['ok']", "'none'")],
        "counters": [("  remember_completed({id})\n  count('completed', 1)\n", ""),
                     ("    count('leased', 1)\n    out[5]", "    out[5]")],
        "holders": [("    redis.call('HSET', K_HOLDERS, id, session)\n", ""),
                    (", {'HDEL', K_HOLDERS}}", "}")],
    }
    for part in parts:
        for old, new in edits[part]:
            if old not in code:
                raise RuntimeError(f"floor: the library has no {old!r} any more")
            code = code.replace(old, new)
    return code


def exp_floor(server: BenchServer, work: Path, quick: bool, reps: int) -> None:
    """8 workers one item at a time (``complete_and_lease``), server CPU per item: rq-cli as
    it is, prototypes without one guarantee after another, the floor of FLOOR_LIBRARY, and
    the server-cpu case's baselines (the peer, the bare RPOPLPUSH + LREM)."""
    import rq_cli.core.scripting.calling as calling
    from rq_cli.core.scripting.scripts import library

    from .cases.scale import run_loop
    from .harness import Ctx

    real = library()
    variants = {"rq 1": (), "rq 1 - type checks": ("types",),
                "rq 1 - type checks - counters": ("types", "counters"),
                "rq 1 - type checks - counters - holders": ("types", "counters", "holders")}
    loops = [*variants, "floor", "bare", "peer"]
    ctx = Ctx(server=server, work=work, quick=quick, reps=reps, cli=None, cli_reason="", env={})
    total = 4_000 if quick else 12_000
    figures: dict[str, list[float]] = {loop: [] for loop in loops}
    client = server.client()
    try:
        for rep in range(reps):
            for loop in loops[rep % len(loops):] + loops[:rep % len(loops)]:
                client.function_flush()
                if loop in variants:  # (the workers fork: they call this library)
                    lib = real._replace(code=_without(real.code, *variants[loop]))
                    calling.library = lambda lib=lib: lib  # type: ignore[attr-defined]
                    f = run_loop(ctx, "rq 1", 8, total)
                elif loop == "floor":
                    client.function_load(FLOOR_LIBRARY)
                    f = run_loop(ctx, "floor", 8, total, worker=_floor_worker)
                else:
                    f = run_loop(ctx, loop, 8, total)
                figures[loop].append(f["cpu_us_per_item"])
                log(f"floor rep {rep + 1}: {loop}: {f['cpu_us_per_item']:.1f} us/item")
    finally:
        calling.library = library  # type: ignore[attr-defined]
        client.function_flush()
        client.close()
    _report("8 workers one item at a time: server CPU per item (INFO cpu)", figures, "bare",
            "us", ratio="x/base")
    _report("... the same, as a fraction of the peer's", figures, "peer", "us", ratio="x/base")


EXPERIMENTS = {"push": exp_push, "pushlua": exp_pushlua, "lease": exp_lease,
               "completelua": exp_completelua, "batchlua": exp_batchlua, "maint": exp_maint,
               "deep": exp_deep, "floor": exp_floor,
               "startup": exp_startup}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.experiments",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("name", choices=list(EXPERIMENTS))
    p.add_argument("--quick", action="store_true")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--server", default=None)
    p.add_argument("--typer", default=None, help="startup: a directory holding another Typer "
                   "(pip install --no-deps --target DIR typer==0.28.0)")
    args = p.parse_args(argv)
    pin_self(nice=-10)
    work = Path(tempfile.mkdtemp(prefix="rqbench-x-"))
    server = BenchServer(work / "server", server_binary(args.server), nice=-10).start()
    try:
        fn = EXPERIMENTS[args.name]
        if args.name == "startup":
            exp_startup(server, work, args.quick, args.reps, args.typer)
        else:
            fn(server, work, args.quick, args.reps)  # type: ignore[operator]
    finally:
        server.close()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
