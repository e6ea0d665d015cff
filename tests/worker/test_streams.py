"""A command's output through the worker (rq_cli/worker/streams.py): memory stays bounded.

With several commands at once, output goes out line by line (each line tagged ``[<id>] ``).
A line without a newline was held whole, and copied again on each read: 60 MB cost 210 MB
and 25 s. Now a line longer than LINE_MAX goes out in pieces of LINE_MAX, each a line.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading

import pytest
import redis

from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem
from rq_cli.worker.poll import Poller
from rq_cli.worker.streams import LINE_MAX, Stream

pytestmark = pytest.mark.timeout(120)


def _copied(data: bytes, **kwargs) -> tuple[bytes, int]:
    """``data`` written into a pipe and copied through a Stream; what came out, and the
    most the Stream held back at once."""
    r, w = os.pipe()
    os.set_blocking(r, False)
    writer = threading.Thread(target=lambda: (os.write(w, data) if data else None,
                                              os.close(w)))
    writer.start()
    sel = Poller()
    dst = io.BytesIO()
    stream = Stream(r, dst, tail=None, **kwargs)
    sel.register(r, False, "out")
    held = 0
    while True:
        sel.wait(5)
        more = stream.copy(sel)
        held = max(held, len(stream.partial))
        if not more:
            break
    writer.join()
    sel.close()
    return dst.getvalue(), held


def test_a_long_line_without_a_newline_goes_out_in_bounded_tagged_pieces() -> None:
    data = b"a" * (5 * LINE_MAX + 123) + b"\nend"
    out, held = _copied(data, tag=b"[x] ")
    assert held <= LINE_MAX
    lines = out.split(b"\n")
    assert lines.pop() == b""
    assert all(line.startswith(b"[x] ") and len(line) <= LINE_MAX + 4 for line in lines)
    assert b"".join(line[4:] for line in lines) == data.replace(b"\n", b"")
    assert lines[-1] == b"[x] end" and len(lines) == 7


def test_a_long_stderr_line_becomes_bounded_log_events() -> None:
    events: list[bytes] = []
    out, held = _copied(b"b" * (3 * LINE_MAX) + b"\nlast", tag=b"", as_log=events.append)
    assert out == b"" and held <= LINE_MAX
    assert events == [b"b" * LINE_MAX] * 3 + [b"last"]


def _peak_rss_kib(url: str, size: int) -> int:
    """The peak RSS of a ``work -c 2`` that runs one command printing ``size`` bytes
    without a newline (measured by a parent of its own: RUSAGE_CHILDREN)."""
    code = ("import resource, subprocess, sys\n"
            "done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
            "assert done.returncode == 0, done\n"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RQ_CLI_", "REDIS_URL"))}
    done = subprocess.run(
        [sys.executable, "-c", code, sys.executable, "-m", "rq_cli", "--no-config", "--url",
         url, "work", "big", "-c", "2", "--max-items", "1", "--", "sh", "-c",
         f"head -c {size} /dev/zero | tr '\\0' a"],
        capture_output=True, text=True, timeout=110, env=env, check=True)
    return int(done.stdout.split()[-1])


def test_a_40_mb_line_without_a_newline_keeps_the_worker_small(
        server_url: str, r: redis.Redis) -> None:
    """Several commands at once: 40 MB of output without a newline costs the worker no more
    memory than 1 byte does, give or take a few buffers (it held, and copied, it whole)."""
    wq = WorkQueue(r, "big")
    wq.push([NewItem(b"{}", "small")])
    small = _peak_rss_kib(server_url, 1)
    wq.push([NewItem(b"{}", "large")])
    large = _peak_rss_kib(server_url, 40_000_000)  # (ru_maxrss: KiB on Linux)
    assert large - small < 16 * 1024, (small, large)
