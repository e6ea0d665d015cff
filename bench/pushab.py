"""A/B of bulk push, side by side on one server:
``python -m bench.pushab REV [lines [rounds]]``.

``rq-cli push q - < lines.jsonl`` with the rq_cli of git revision ``REV`` against the working
tree's, and ``redis-cli --pipe`` of the same items (case ``push``'s files), interleaved,
``rounds`` rounds (default 5; lines default 200,000; the bench's server, Redis at
/usr/bin/redis-server); per command the wall time's median, the
ratio ``redis-cli --pipe`` / it per round (median and every round's), and the least client
CPU (user + sys) and server CPU (``INFO cpu``) over the rounds, with each rq-cli's start-up
alone (an empty stdin) beside it. CPU time is the steadier figure on a loaded machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from statistics import median

from tests.servers import ServerProcess

from .cases.push import QUEUE, jsonl_file, resp_file
from .harness import rotated, run_timed, server_binary


def tree_at(rev: str) -> Path:
    """A copy of ``rev``'s rq_cli package (byte-compiled), for PYTHONPATH."""
    tmp = Path(tempfile.mkdtemp(prefix="rq-pushab-"))
    subprocess.run(f"git archive {rev} rq_cli | tar -x -C {tmp}", shell=True, check=True)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tmp)], check=True)
    return tmp


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    rev, lines = argv[0], int(argv[1]) if len(argv) > 1 else 200_000
    rounds = int(argv[2]) if len(argv) > 2 else 5
    here = Path(__file__).resolve().parent.parent
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(here / "rq_cli")], check=True)
    work = Path(tempfile.mkdtemp(prefix="rq-pushab-work-"))
    src = jsonl_file(work, lines)
    resp = resp_file(work, src, QUEUE)
    server = ServerProcess(work / "server", binary=server_binary(None)).start()
    client = server.client()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RQ_CLI_")}
    env.update({"RQ_CLI_URL": f"redis://127.0.0.1:{server.port}",
                "XDG_CONFIG_HOME": str(work / "config")})
    cli = shutil.which("rq-cli") or "rq-cli"
    trees = {rev: tree_at(rev), "working tree": here}
    runs: dict[str, tuple[list[str], dict[str, str], Path]] = {
        "redis-cli --pipe": (["redis-cli", "-p", str(server.port), "--pipe"], env, resp)}
    for name, tree in trees.items():
        tree_env = {**env, "PYTHONPATH": str(tree)}
        runs[name] = ([cli, "push", QUEUE, "-"], tree_env, src)
        runs[f"{name} (start-up)"] = ([cli, "push", QUEUE, "-"], tree_env, Path(os.devnull))
    wall: dict[str, list[float]] = {k: [] for k in runs}
    cpu: dict[str, list[float]] = {k: [] for k in runs}
    server_cpu: dict[str, list[float]] = {k: [] for k in runs}

    def used() -> float:
        info = client.info("cpu")
        return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])

    try:
        for rnd in range(rounds):
            for name in rotated(list(runs), rnd):
                argv, run_env, stdin = runs[name]
                client.flushall()
                before = used()
                done = run_timed(argv, stdin_path=stdin, env=run_env)
                if done.returncode:
                    raise RuntimeError(f"{name} exited {done.returncode}: {done.stderr[-300:]}")
                server_cpu[name].append(used() - before)
                wall[name].append(done.seconds)
                cpu[name].append(done.cpu)
    finally:
        client.close()
        server.close()
    base = wall["redis-cli --pipe"]
    print(f"{lines:,} lines, {rounds} rounds, {server.binary}")
    for name in runs:
        ratios = [b / t for b, t in zip(base, wall[name], strict=True)]
        ratio = "" if name.endswith("(start-up)") or name == "redis-cli --pipe" else \
            f"; pipe/it {median(ratios):.2f}x ({', '.join(f'{r:.2f}' for r in ratios)})"
        print(f"{name:28s} wall {median(wall[name]):.3f} s{ratio}; least client CPU "
              f"{min(cpu[name]):.3f} s, server CPU {min(server_cpu[name]):.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
