"""Issue 21, dash: ``rq-cli dash`` opening a queue of 1M dead items (``--quick``: 100k).

A child process runs the console headless (Textual's ``run_test``, 120x40) against the
bench server: the overview's first read, then enter and the dead tab. Measured: seconds
from the key press that opens the queue to its first page of dead items on screen (and
from the start of the process), the child's peak RSS, and the longest server call meanwhile
(SLOWLOG, every call logged). Needs Textual (the dash extra)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ..fill import fill
from ..harness import CaseResult, Ctx, Row, log, median, skipped_row

Q = "dq"
ROOT = Path(__file__).resolve().parents[2]  # (the child imports bench.dash_probe)


def run(ctx: Ctx) -> CaseResult:
    res = CaseResult("dash")
    try:
        import textual  # noqa: F401
    except ImportError:
        for measure, budget, unit in (("first page of a queue's dead items", 1.0, " s"),
                                      ("peak RSS of the console", 100, " MB"),
                                      ("longest server call (SLOWLOG)", 20, " ms")):
            res.rows.append(skipped_row("21 dash", measure, "lt", budget,
                                        "textual not installed (pip install 'rqcli[dash]')",
                                        unit=unit))
        return res
    n = ctx.scale(1_000_000, 100_000)
    server = ctx.server
    client = server.client()
    server.flush()
    fill(client, Q, "dead", n)
    label = f"{n // 1_000_000}M" if n >= 1_000_000 else f"{n // 1000}k"
    opened, started, rss, slowest = [], [], [], []
    for _ in range(ctx.reps):
        client.config_set("slowlog-log-slower-than", 0)
        client.config_set("slowlog-max-len", 10_000)
        client.slowlog_reset()
        out = subprocess.run([sys.executable, "-m", "bench.dash_probe", server.url, Q, str(n)],
                             capture_output=True, text=True, timeout=120, cwd=ctx.work,
                             env={**ctx.env, "PYTHONPATH": str(ROOT)})
        entries = client.slowlog_get(10_000)
        client.config_set("slowlog-log-slower-than", 10_000)
        if out.returncode:
            raise RuntimeError(f"dash probe exited {out.returncode}: {out.stderr[-500:]}")
        got = json.loads(out.stdout.strip().splitlines()[-1])
        opened.append(got["open_s"])
        started.append(got["start_s"])
        rss.append(got["rss_mb"])
        slowest.append(max(e["duration"] for e in entries) / 1000 if entries else 0.0)
        log(f"dash: first page {opened[-1] * 1000:.0f} ms after the key, "
            f"{started[-1]:.2f} s after start, peak RSS {rss[-1]:.0f} MB, longest server "
            f"call {slowest[-1]:.2f} ms ({len(entries)} calls)")
    server.flush()
    res.raw |= {"items": n, "open_s": opened, "start_s": started, "rss_mb": rss,
                "longest_server_call_ms": slowest}
    res.rows.append(Row("21 dash", f"first page of {label} dead items, from the key press",
                        f"{median(opened) * 1000:.0f} ms", "-", opened, "lt", 1.0, unit=" s",
                        note=f"{median(started):.2f} s from the process start"))
    res.rows.append(Row("21 dash", f"  peak RSS of the console ({label} dead)", "-", "-", rss,
                        "lt", 100, unit=" MB"))
    res.rows.append(Row("21 dash", "  longest server call meanwhile (SLOWLOG)", "-", "-",
                        slowest, "lt", 20, unit=" ms"))
    return res
