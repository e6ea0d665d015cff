"""Profile of the bulk push path: where the time of ``push q -`` goes.

1. Component costs per item, each timed alone on the same lines: reading lines, JSON
   validation (``json.loads``), id generation, packing the EVALSHA commands (redis-py).
2. The library path (lines -> json.loads -> push_batches) and, when installed, the CLI
   (``rq-cli push q -``): wall time per item, client CPU per item, and the server's side --
   CPU of the server process (INFO cpu) and the time in its commands per batch (INFO
   commandstats: a script call, or a transaction's commands).
3. cProfile of the library path in this process and of the CLI in a subprocess: the functions
   with the most own time.
"""

from __future__ import annotations

import cProfile
import io
import json
import os
import pstats
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from ..harness import CaseResult, Ctx, log, run_timed
from .push import jsonl_file

QUEUE = "fq"


def _server_cpu(client: Any) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def _evalsha(client: Any) -> dict[str, float]:
    """The server's time in the push's commands (commandstats): its batches are script
    calls, or transactions (EXEC; the commands inside are counted each on their own, and
    EXEC's time, which holds theirs, is left out)."""
    stats = client.info("commandstats")
    out: dict[str, float] = {"calls": 0, "usec": 0.0}
    scripts = 0
    for name, entry in stats.items():
        if name in ("cmdstat_evalsha", "cmdstat_eval", "cmdstat_fcall"):
            scripts += int(entry["calls"])
        if name not in ("cmdstat_exec", "cmdstat_info") and not name.startswith(
                "cmdstat_config"):
            out["usec"] += float(entry["usec"])
    # (a transaction ends in a script call: its batches are its EXECs)
    out["calls"] = int(stats.get("cmdstat_exec", {}).get("calls", 0)) or scripts
    return out


def _top(prof: pstats.Stats, n: int = 22) -> str:
    buf = io.StringIO()
    prof.stream = buf  # type: ignore[attr-defined]
    prof.sort_stats("tottime").print_stats(n)
    text = buf.getvalue()
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
    return "\n".join(line.replace(str(Path(sys.prefix)), "<venv>")
                     .replace(str(Path(__file__).resolve().parents[2]), "<repo>")
                     for line in lines[max(start - 1, 0):]).rstrip()


def run(ctx: Ctx) -> CaseResult:
    from rq_cli.core.queue import BATCH, WorkQueue

    res = CaseResult("profile")
    n = ctx.scale(200_000, 20_000)
    src = jsonl_file(ctx.work, n)
    client = ctx.server.client()
    with open(src, "rb") as f:
        lines = [line.rstrip(b"\n") for line in f]
    per: dict[str, float] = {}

    t0 = time.perf_counter()
    with open(src, "rb") as f:
        for _ in f:
            pass
    per["read lines"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    for line in lines:
        json.loads(line)
    per["json.loads (validation)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(n):
        os.urandom(16).hex()
    per["id: os.urandom(16).hex()"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(n):
        _ = uuid.uuid4().hex
    per["id: uuid.uuid4().hex (alternative)"] = time.perf_counter() - t0

    q = WorkQueue(client, QUEUE)
    script = q.script("push")
    conn = client.connection_pool.get_connection()
    try:
        keys = q.keys.script_keys
        ids = [os.urandom(16).hex() for _ in range(n)]
        t0 = time.perf_counter()
        for i in range(0, n, BATCH):
            args: list[Any] = [q.prefix, "", "compat", "0", "0", "0"]
            for item_id, data in zip(ids[i:i + BATCH], lines[i:i + BATCH], strict=True):
                args.append(item_id)
                args.append(data)
            conn.pack_commands([("EVALSHA", script.sha, len(keys), *keys, *args)])
        per["pack EVALSHA commands (redis-py)"] = time.perf_counter() - t0
    finally:
        client.connection_pool.release(conn)

    def validated(items: list[bytes]) -> Any:
        for line in items:
            json.loads(line)  # what the CLI must do before pushing a line
            yield line

    def lib_path() -> None:
        for _ in q.push_batches(validated(lines)):
            pass

    # Library end to end, with server-side accounting.
    ctx.server.flush()
    client.config_resetstat()
    cpu0, wall0, proc0 = _server_cpu(client), time.perf_counter(), time.process_time()
    lib_path()
    wall, proc = time.perf_counter() - wall0, time.process_time() - proc0
    srv, ev = _server_cpu(client) - cpu0, _evalsha(client)
    breakdown: dict[str, Any] = {
        "items": n,
        "component_us_per_item": {k: v / n * 1e6 for k, v in per.items()},
        "library": {"wall_us": wall / n * 1e6, "client_cpu_us": proc / n * 1e6,
                    "server_cpu_us": srv / n * 1e6, "lua_us": ev["usec"] / n,
                    "script_calls": ev["calls"],
                    "usec_per_call": ev["usec"] / ev["calls"] if ev["calls"] else None},
    }

    # cProfile of the library path.
    ctx.server.flush()
    prof = cProfile.Profile()
    prof.enable()
    lib_path()
    prof.disable()
    lib_top = _top(pstats.Stats(prof))

    cli_top = ""
    if ctx.cli:
        ctx.server.flush()
        client.config_resetstat()
        cpu0 = _server_cpu(client)
        r = run_timed([ctx.cli, "push", QUEUE, "-"], stdin_path=src, env=ctx.env, cwd=ctx.work)
        srv, ev = _server_cpu(client) - cpu0, _evalsha(client)
        breakdown["cli"] = {"wall_us": r.seconds / n * 1e6, "server_cpu_us": srv / n * 1e6,
                            "lua_us": ev["usec"] / n, "script_calls": ev["calls"],
                            "usec_per_call": ev["usec"] / ev["calls"] if ev["calls"] else None,
                            "returncode": r.returncode, "maxrss_mb": r.maxrss_kb / 1024}
        ctx.server.flush()
        out = ctx.work / "cli.prof"
        code = (f"import cProfile, sys; sys.argv = ['rq-cli', 'push', {QUEUE!r}, '-'];"
                "from rq_cli.cli import main\n"
                "p = cProfile.Profile(); p.enable()\n"
                "try:\n    main()\nexcept SystemExit:\n    pass\n"
                f"p.disable(); p.dump_stats({str(out)!r})\n")
        with open(src, "rb") as stdin:
            done = subprocess.run([sys.executable, "-c", code], stdin=stdin,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  env=ctx.env, cwd=ctx.work, timeout=900)
        if out.exists():
            cli_top = _top(pstats.Stats(str(out)))
        else:
            cli_top = f"(the CLI profile failed: {done.stderr.decode(errors='replace')[-400:]})"
    ctx.server.flush()

    # CPU time of the CLI as a child process (user + sys), measured once more without profiling.
    if ctx.cli:
        import resource

        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        run_timed([ctx.cli, "push", QUEUE, "-"], stdin_path=src, env=ctx.env, cwd=ctx.work)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        breakdown["cli"]["client_cpu_us"] = ((after.ru_utime - before.ru_utime)
                                             + (after.ru_stime - before.ru_stime)) / n * 1e6
        ctx.server.flush()

    res.raw = {"breakdown": breakdown, "library_cprofile": lib_top, "cli_cprofile": cli_top}
    res.raw["text"] = render(breakdown, lib_top, cli_top)
    log("profile done")
    return res


def render(b: dict[str, Any], lib_top: str, cli_top: str) -> str:
    n = b["items"]
    out = [f"Bulk push profile ({n:,} JSON lines of ~85 bytes; microseconds per item)", ""]
    out.append("Components, each timed alone in one process:")
    for k, v in b["component_us_per_item"].items():
        out.append(f"  {k:<40} {v:7.2f} us")
    for name in ("library", "cli"):
        d = b.get(name)
        if not d:
            continue
        title = ("library: lines -> json.loads -> push_batches (in-process)" if name == "library"
                 else "CLI: rq-cli push q - < file (subprocess)")
        out += ["", title]
        out.append(f"  {'wall time':<40} {d['wall_us']:7.2f} us  "
                   f"({1e6 / d['wall_us'] / 1000:.0f}k items/s)")
        if "client_cpu_us" in d:
            out.append(f"  {'client CPU (user+sys)':<40} {d['client_cpu_us']:7.2f} us")
        out.append(f"  {'server CPU (INFO cpu)':<40} {d['server_cpu_us']:7.2f} us")
        upc = d["usec_per_call"]
        out.append(f"  {'server command time (commandstats)':<40} {d['lua_us']:7.2f} us  "
                   f"({d['script_calls']:.0f} batches, {upc:.0f} us each)" if upc else "")
    out += ["", "cProfile, library path (top functions by own time):", lib_top]
    if cli_top:
        out += ["", "cProfile, rq-cli push q - (top functions by own time):", cli_top]
    return "\n".join(out)
