"""Case 1, bulk push: ``rq-cli push q - < N-lines.jsonl`` vs ``redis-cli --pipe`` loading the
same items as plain SET + LPUSH (a RESP protocol file generated beforehand), at 1M lines and
at 200k (where start-up weighs more: issue 30 holds both to the budget), and the library's
``push_batches`` in-process. Memory: the CLI's peak RSS for 1M lines vs 200k lines (the file
must be streamed, not loaded).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from ..harness import CaseResult, Ctx, Row, log, median, rotated, run_timed, skipped_row, summary

QUEUE = "bq"
PAYLOAD = ('{{"n":{i},"user":"user-{u}","action":"send-email",'
           '"body":"lorem ipsum dolor sit amet"}}\n')


def jsonl_file(work: Path, n: int) -> Path:
    """``n`` JSON lines (~85 bytes each), generated once per run."""
    path = work / f"items-{n}.jsonl"
    if not path.exists():
        with open(path, "w") as f:
            for start in range(0, n, 10_000):
                f.write("".join(PAYLOAD.format(i=i, u=i % 977)
                                for i in range(start, min(start + 10_000, n))))
    return path


def _bulk(b: bytes) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(b), b)


def resp_file(work: Path, source: Path, prefix: str) -> Path:
    """The same items as a RESP stream of SET P:item:<id> <data> + LPUSH P:queue <id>,
    with random UUID-hex ids (as the peers make them) generated here, not timed."""
    path = work / f"{source.stem}.resp"
    if path.exists():
        return path
    queue = _bulk(f"{prefix}:queue".encode())
    item = f"{prefix}:item:".encode()
    with open(source, "rb") as src, open(path, "wb") as out:
        buf = []
        for line in src:
            data = line.rstrip(b"\n")
            item_id = os.urandom(16).hex().encode()
            buf.append(b"*3\r\n$3\r\nSET\r\n" + _bulk(item + item_id) + _bulk(data)
                       + b"*3\r\n$5\r\nLPUSH\r\n" + queue + _bulk(item_id))
            if len(buf) >= 10_000:
                out.write(b"".join(buf))
                buf.clear()
        out.write(b"".join(buf))
    return path


def run(ctx: Ctx) -> CaseResult:
    res = CaseResult("push")
    n = ctx.scale(1_000_000, 50_000)
    n_small = n // 5
    work = ctx.work
    src = jsonl_file(work, n)
    small = jsonl_file(work, n_small)
    resp = resp_file(work, src, QUEUE)
    resp_small = resp_file(work, small, QUEUE)
    redis_cli = shutil.which("redis-cli")
    client = ctx.server.client()
    host, port = "127.0.0.1", str(ctx.server.port)

    def check(expect: int, what: str) -> None:
        got = client.llen(f"{QUEUE}:queue")
        if got != expect:
            raise RuntimeError(f"{what}: expected {expect} items in the queue, found {got}")

    def t_redis_cli(path: Path, count: int) -> float:
        r = run_timed([redis_cli, "-h", host, "-p", port, "--pipe"], stdin_path=path)  # type: ignore[list-item]
        if r.returncode:
            raise RuntimeError(f"redis-cli --pipe exited {r.returncode}")
        check(count, "redis-cli --pipe")
        return r.seconds

    rss: dict[str, list[int]] = {"1M": [], "200k": []}

    def t_cli(path: Path, count: int, key: str) -> float:
        r = run_timed([ctx.cli, "push", QUEUE, "-"], stdin_path=path, env=ctx.env,  # type: ignore[list-item]
                      cwd=work, rss=True)
        if r.returncode:
            raise RuntimeError(f"rq-cli push exited {r.returncode}: {r.stderr.strip()[-300:]}")
        check(count, "rq-cli push")
        rss[key].append(r.maxrss_kb)
        return r.seconds

    def t_lib() -> float:
        from rq_cli.core.queue import WorkQueue

        q = WorkQueue(client, QUEUE)
        t0 = time.perf_counter()
        with open(src, "rb") as f:
            for _ in q.push_batches(line.rstrip(b"\n") for line in f):
                pass
        dt = time.perf_counter() - t0
        check(n, "push_batches")
        return dt

    fns = {"redis-cli --pipe": lambda: t_redis_cli(resp, n), "push_batches": t_lib}
    if ctx.cli:
        fns["rq-cli push"] = lambda: t_cli(src, n, "1M")
        fns["redis-cli --pipe (small)"] = lambda: t_redis_cli(resp_small, n_small)
        fns["rq-cli push (small)"] = lambda: t_cli(small, n_small, "200k")
    times: dict[str, list[float]] = {k: [] for k in fns}
    names = list(fns)
    for rep in range(ctx.reps):
        order = rotated(names, rep)
        for name in order:
            ctx.server.flush()
            times[name].append(fns[name]())
            log(f"push rep {rep + 1}: {name}: {times[name][-1]:.2f} s")
    ctx.server.flush()

    base = times["redis-cli --pipe"]
    rate = lambda secs: n / secs  # noqa: E731
    res.raw = {"items": n, "small_items": n_small, "line_bytes": src.stat().st_size / n,
               "seconds": {k: summary(v) for k, v in times.items()},
               "maxrss_kb": rss}
    label = f"{n // 1000}k" if n < 1_000_000 else f"{n // 1_000_000}M"
    slabel = f"{n_small // 1000}k"
    base_txt = f"{rate(median(base)) / 1000:.0f}k items/s"
    if ctx.cli:
        ours = times["rq-cli push"]
        res.rows.append(Row("1 bulk push", f"rq-cli push q - ({label} lines) / redis-cli --pipe",
                            f"{rate(median(ours)) / 1000:.0f}k items/s", base_txt,
                            [b / o for o, b in zip(ours, base, strict=True)], "min", 0.75))
        small_base, ours_small = times["redis-cli --pipe (small)"], times["rq-cli push (small)"]
        res.rows.append(Row("1 bulk push",
                            f"rq-cli push q - ({slabel} lines) / redis-cli --pipe",
                            f"{n_small / median(ours_small) / 1000:.0f}k items/s",
                            f"{n_small / median(small_base) / 1000:.0f}k items/s",
                            [b / o for o, b in zip(ours_small, small_base, strict=True)],
                            "min", 0.75))
        res.rows.append(Row("1 bulk push", f"rq-cli push max RSS {label} / {slabel} lines",
                            f"{median(rss['1M']) / 1024:.0f} MB",
                            f"{median(rss['200k']) / 1024:.0f} MB",
                            [a / b for a, b in zip(rss["1M"], rss["200k"], strict=True)],
                            "max", 1.25))
    else:
        res.rows.append(skipped_row("1 bulk push",
                                    f"rq-cli push q - ({label} lines) / redis-cli --pipe",
                                    "min", 0.75, "CLI not available"))
        res.rows.append(skipped_row("1 bulk push",
                                    f"rq-cli push q - ({slabel} lines) / redis-cli --pipe",
                                    "min", 0.75, "CLI not available"))
        res.rows.append(skipped_row("1 bulk push", f"rq-cli push max RSS {label} / {slabel} lines",
                                    "max", 1.25, "CLI not available"))
    lib = times["push_batches"]
    res.rows.append(Row("1 bulk push", "library push_batches / redis-cli --pipe",
                        f"{rate(median(lib)) / 1000:.0f}k items/s", base_txt,
                        [b / o for o, b in zip(lib, base, strict=True)], "info", None,
                        note="in-process, no JSON validation"))
    return res
