"""The child of the dash case (bench/cases/dash.py): ``python -m bench.dash_probe URL QUEUE N``
runs ``rq-cli dash`` headless on QUEUE, opens its dead tab, and prints one JSON line: seconds
from the key press to the first page (``open_s``) and from the process start (``start_s``),
and the peak RSS in MB."""

from __future__ import annotations

import asyncio
import json
import resource
import sys
import time

from rq_cli.cli.common import State
from rq_cli.cli.inspect import stats_targets
from rq_cli.dash.app import DashApp


async def probe(url: str, queue: str, n: int, t0: float) -> dict[str, float]:
    st = State(url=url, no_config=True)
    app = DashApp(st, stats_targets(st, [queue], False), interval=3600)
    async with app.run_test(size=(120, 40)) as pilot:
        while not app.screen.query("DataTable") or \
                app.screen.query_one("DataTable").row_count == 0:
            await pilot.pause(0.01)
        pressed = time.perf_counter()
        await pilot.press("enter", "4")
        while True:
            screen = app.screen
            page = getattr(screen, "page_", None)
            if page is not None and getattr(screen, "tab", "") == "dead" and page.rows:
                break
            await pilot.pause(0.005)
        done = time.perf_counter()
        if page.total != n:
            raise RuntimeError(f"the dead tab says {page.total} items, not {n}")
    st.close()
    return {"open_s": done - pressed, "start_s": done - t0, "rss_mb": peak_rss_mb()}


def peak_rss_mb() -> float:
    """This process's own peak RSS: VmHWM of /proc/self/status. (``ru_maxrss`` carries the
    RSS of the process this one was forked from over fork and exec: run from a large bench
    process, it said 284 MB for a 54 MB console.)"""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


if __name__ == "__main__":
    t0 = time.perf_counter()
    print(json.dumps(asyncio.run(probe(sys.argv[1], sys.argv[2], int(sys.argv[3]), t0))))
