"""Case 6, start-up: ``rq-cli --version`` and ``rq-cli push q '{}'`` vs ``python -c "import
redis"`` (hyperfine when installed, interleaved rounds), and which modules each command imports
(``python -X importtime``), so heavy imports can be found and deferred.

rq_cli's bytecode is compiled first, as ``pip install`` does for redis (an editable install
under ``PYTHONDONTWRITEBYTECODE=1`` would otherwise recompile changed modules on every run).
A reference row shows ``import redis`` ending in ``os._exit``: the share of the baseline that
is the interpreter's teardown, which ``rq-cli`` skips (``rq_cli.cli.root.hard_exit``).
"""

from __future__ import annotations

import compileall
import subprocess
import sys
from pathlib import Path
from typing import Any

import rq_cli

from ..harness import CaseResult, Ctx, Row, log, median, skipped_row, time_commands

QUEUE = "uq"
NO_TEARDOWN = "python -c 'import redis; os._exit(0)'"
WATCH = ("rich", "typer", "click", "redis", "hiredis", "asyncio", "ssl", "email", "http",
         "urllib", "json", "uuid", "dataclasses", "typing_extensions", "shellingham", "pygments",
         "markdown_it", "tomllib", "socket", "hashlib", "importlib.metadata", "rq_cli")


def importtime(argv: list[str], ctx: Ctx) -> dict[str, Any]:
    """Parse ``python -X importtime``: top-level imports by cumulative time, packages seen."""
    cmd = [sys.executable, "-X", "importtime", *argv]
    text = ""
    for _ in range(2):  # the second run has warm .pyc files and page cache
        text = subprocess.run(cmd, env=ctx.env, cwd=ctx.work, capture_output=True, text=True,
                              timeout=60).stderr
    entries = []
    for line in text.splitlines():
        if not line.startswith("import time:") or "imported package" in line:
            continue
        parts = line[len("import time:"):].split("|")
        if len(parts) != 3:
            continue
        self_us, cum_us, name = int(parts[0]), int(parts[1]), parts[2]
        depth = (len(name) - len(name.lstrip(" ")) - 1) // 2
        entries.append({"module": name.strip(), "self_us": self_us, "cum_us": cum_us,
                        "depth": depth})
    modules = {e["module"] for e in entries}
    top = sorted((e for e in entries if e["depth"] == 0), key=lambda e: -e["cum_us"])
    return {
        "argv": argv,
        "modules": len(modules),
        "total_ms": round(sum(e["cum_us"] for e in entries if e["depth"] == 0) / 1000, 1),
        "top": [{"module": e["module"], "cum_ms": round(e["cum_us"] / 1000, 1)} for e in top[:15]],
        "packages": {w: round(sum(e["self_us"] for e in entries
                                  if e["module"] == w or e["module"].startswith(w + ".")) / 1000, 1)
                     for w in WATCH if any(m == w or m.startswith(w + ".") for m in modules)},
    }


def run(ctx: Ctx) -> CaseResult:
    res = CaseResult("startup")
    compileall.compile_dir(Path(rq_cli.__file__).parent, quiet=1)
    py = sys.executable
    cmds = {"python -c 'import redis'": [py, "-c", "import redis"],
            "python -c pass": [py, "-c", "pass"],
            NO_TEARDOWN: [py, "-c", "import os, redis; os._exit(0)"]}
    if ctx.cli:
        cmds["rq-cli --version"] = [ctx.cli, "--version"]
        cmds["rq-cli push q '{}'"] = [ctx.cli, "push", QUEUE, "{}"]
    times, cpu, tool = time_commands(cmds, rounds=ctx.scale(5, 2), runs=ctx.scale(10, 4),
                                     env=ctx.env, cwd=ctx.work, warmup=3)
    ctx.server.flush()
    med = {k: [median(r) for r in v] for k, v in times.items()}
    log("startup: " + ", ".join(f"{k} {median(v) * 1000:.0f} ms" for k, v in med.items()))
    res.raw = {"seconds": times, "cpu_seconds": cpu, "tool": tool}
    base = med["python -c 'import redis'"]
    base_txt = f"{median(base) * 1000:.0f} ms"
    for name in ("rq-cli --version", "rq-cli push q '{}'"):
        if ctx.cli:
            res.rows.append(Row("6 start-up", f"{name} / python -c 'import redis'",
                                f"{median(med[name]) * 1000:.0f} ms", base_txt,
                                [o / b for o, b in zip(med[name], base, strict=True)], "max", 1.3))
        else:
            res.rows.append(skipped_row("6 start-up", f"{name} / python -c 'import redis'",
                                        "max", 1.3, "CLI not available"))
    base_cpu = cpu["python -c 'import redis'"]
    for name in ("rq-cli --version", "rq-cli push q '{}'"):
        if ctx.cli:  # CPU time is far less disturbed by a loaded machine than wall time
            res.rows.append(Row("6 start-up", f"{name} / import redis, CPU time (user+sys)",
                                f"{median(cpu[name]) * 1000:.0f} ms",
                                f"{median(base_cpu) * 1000:.0f} ms",
                                [o / b for o, b in zip(cpu[name], base_cpu, strict=True)],
                                "info", None))
    for name in ("python -c pass", NO_TEARDOWN):
        ref = med[name]
        res.rows.append(Row("6 start-up", f"{name} / python -c 'import redis' (reference)",
                            f"{median(ref) * 1000:.0f} ms", base_txt,
                            [o / b for o, b in zip(ref, base, strict=True)], "info", None))
    imports = {"python -c 'import redis'": importtime(["-c", "import redis"], ctx)}
    if ctx.cli:
        imports["rq-cli --version"] = importtime([ctx.cli, "--version"], ctx)
        imports["rq-cli push q '{}'"] = importtime([ctx.cli, "push", QUEUE, "{}"], ctx)
        ctx.server.flush()
    res.raw["imports"] = imports
    return res
