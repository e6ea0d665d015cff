"""The partition of issue 43, in network namespaces: ``python -m bench.partition
[--setting all|1|0] [--hold 12] [--server valkey]`` (root; iproute2; about a minute a run).

A Sentinel deployment, each process in a network namespace of its own on one bridge:

- side A: the primary ``p``, the replica ``r1`` beside it, and a client ``c``: a library
  pusher (one item a call), ``rq-cli push QUEUE --with-ids -`` fed through a pipe for as long
  as it runs (its ids printed are acknowledged), and a worker (lease one, complete it);
- side B: the other replica ``r2``, the three sentinels, and a client ``d`` (a worker).

The client pushes a backlog first (``--backlog``, in batches), so that both sides' workers
have items from before the cut to complete. After a few seconds of work, side A is cut from
side B for ``--hold`` seconds (one-sided blackhole routes in every namespace: connects hang,
as in a real partition); the sentinels
promote ``r2``, while ``r1`` goes on answering ``p``'s WAITs. At the heal the sentinels
demote ``p`` (the time it took is reported) and whatever was written there is thrown away.
The pusher then stops, the workers drain the queue, and the script counts:

- ``lost``: pushes acknowledged (the library's call returned; the CLI printed the id) whose
  item was never completed (a complete cut off by the partition counts as done: it may
  have been);
- ``twice``: ids whose complete was confirmed more than once;
- ``unconfirmed`` (exit 8) and ``failed`` (an error: outcome unknown) pushes.

Exit status 0 when nothing acknowledged was lost and nothing completed twice, 1 otherwise
(with ``--setting 1`` the run loses pushes: the check can fail). The clients are this module
run again inside a namespace (``--client``); nothing is mocked. Namespaces and processes are
removed at the end (the names start ``rqp43-``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from .harness import server_binary

PREFIX = "rqp43-"
NET = "10.243.0."
NODES = {"p": 2, "r1": 3, "r2": 4, "s1": 5, "s2": 6, "s3": 7, "c": 8, "d": 9}
SIDE_A = ("p", "r1", "c")
SIDE_B = ("r2", "s1", "s2", "s3", "d")
SERVICE = "mymaster"
QUEUE = "part"
PORT, SENTINEL_PORT = 6379, 26379


def _ns(node: str) -> str:
    return PREFIX + node


def _ip(node: str) -> str:
    return NET + str(NODES[node])


def _run(*args: str, check: bool = True) -> str:
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise SystemExit(f"partition: {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def _in(node: str, *args: str, check: bool = True) -> str:
    return _run("ip", "netns", "exec", _ns(node), *args, check=check)


# -- the network ---------------------------------------------------------------------------

def net_up() -> None:
    bridge = PREFIX + "br"
    _run("ip", "netns", "add", bridge)
    _in("br", "ip", "link", "add", "br0", "type", "bridge")
    _in("br", "ip", "link", "set", "br0", "up")
    for node in NODES:
        _run("ip", "netns", "add", _ns(node))
        inside, outside = f"{PREFIX}v{node}", f"{PREFIX}b{node}"
        _run("ip", "link", "add", inside, "type", "veth", "peer", "name", outside)
        _run("ip", "link", "set", inside, "netns", _ns(node))
        _run("ip", "link", "set", outside, "netns", bridge)
        _in("br", "ip", "link", "set", outside, "master", "br0", "up")
        _in(node, "ip", "addr", "add", f"{_ip(node)}/24", "dev", inside)
        _in(node, "ip", "link", "set", inside, "up")
        _in(node, "ip", "link", "set", "lo", "up")


def net_down() -> None:
    for node in (*NODES, "br"):
        _run("ip", "netns", "del", _ns(node), check=False)


def cut(on: bool) -> None:
    """Blackhole routes both ways between the sides (added with ``on``, else removed)."""
    verb = "add" if on else "del"
    for here, there in ((SIDE_A, SIDE_B), (SIDE_B, SIDE_A)):
        for node in here:
            for other in there:
                _in(node, "ip", "route", verb, "blackhole", f"{_ip(other)}/32")


# -- the servers ---------------------------------------------------------------------------

def ask(node: str, *command: str, port: int = PORT, via: str = "c") -> str:
    """A command to ``node``'s server through redis-cli, from namespace ``via``."""
    return _in(via, "redis-cli", "-h", _ip(node), "-p", str(port), *command,
               check=False).strip()


def wait(condition: Any, timeout: float, what: str) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if condition():
            return time.monotonic() - start
        time.sleep(0.1)
    raise SystemExit(f"partition: timed out after {timeout:g} s waiting for {what}")


def start_servers(binary: str, work: Path) -> list[subprocess.Popen[bytes]]:
    procs = []
    for node in ("p", "r1", "r2"):
        folder = work / node
        folder.mkdir()
        args = [binary, "--port", str(PORT), "--bind", _ip(node), "--save", "",
                "--appendonly", "no", "--dir", str(folder), "--logfile", "server.log",
                "--repl-diskless-sync-delay", "0", "--protected-mode", "no"]
        if node != "p":
            args += ["--replicaof", _ip("p"), str(PORT)]
        procs.append(subprocess.Popen(["ip", "netns", "exec", _ns(node), *args]))
    wait(lambda: "connected_slaves:2" in ask("p", "INFO", "replication"), 30,
         "both replicas to connect")
    for node in ("s1", "s2", "s3"):
        folder = work / node
        folder.mkdir()
        conf = folder / "sentinel.conf"
        conf.write_text(f"port {SENTINEL_PORT}\nbind {_ip(node)}\nprotected-mode no\n"
                        f"dir {folder}\nlogfile sentinel.log\n"
                        f"sentinel monitor {SERVICE} {_ip('p')} {PORT} 2\n"
                        f"sentinel down-after-milliseconds {SERVICE} 2000\n"
                        f"sentinel failover-timeout {SERVICE} 10000\n")
        procs.append(subprocess.Popen(["ip", "netns", "exec", _ns(node), binary, str(conf),
                                       "--sentinel"]))

    def known() -> bool:
        return all(ask(s, "SENTINEL", "REPLICAS", SERVICE, port=SENTINEL_PORT,
                       via=s).count("slave") >= 2 for s in ("s1", "s2", "s3"))
    wait(known, 30, "the sentinels to know both replicas")
    return procs


def master_of(via: str = "d") -> str:
    reply = ask("s1", "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE, port=SENTINEL_PORT,
                via=via)
    return reply.splitlines()[0] if reply else ""


# -- the clients (run inside a namespace) ----------------------------------------------------

def client(args: argparse.Namespace) -> None:
    from rq_cli.connection.connect import connect
    from rq_cli.core.queue import WorkQueue
    from rq_cli.core.types import NewItem, QueueOptions
    from rq_cli.errors import Unconfirmed

    work = Path(args.dir)
    setting: int | str = args.setting if args.setting == "all" else int(args.setting)
    options = QueueOptions(lease_seconds=3.0, wait_replicas=setting, wait_timeout=1.0)
    url = "redis+sentinel://" + ",".join(f"{_ip(s)}:{SENTINEL_PORT}"
                                         for s in ("s1", "s2", "s3")) + f"/{SERVICE}"
    out: dict[str, Any] = {"acked": [], "unconfirmed": [], "failed": 0, "confirmed": [],
                           "ran": [], "printed": [], "exits": []}

    def pusher() -> None:
        q = WorkQueue(connect(url, timeout=2.0), QUEUE, options)
        backlog = [NewItem(b"{}", f"b{args.client}{n}") for n in range(args.backlog)]
        for batch in q.push_batches(backlog, batch_size=100):  # (both sides' work at the cut)
            out["acked"].extend(result.id for result in batch if result.added)
        n = 0
        while not (work / "stop-push").exists():
            n += 1
            name = f"{args.client}{n}"
            try:
                q.push([NewItem(b"{}", name)])
                out["acked"].append(name)
            except Unconfirmed:
                out["unconfirmed"].append(name)
            except Exception:
                out["failed"] += 1
                time.sleep(0.05)
            time.sleep(0.005)

    def worker() -> None:
        q = WorkQueue(connect(url, timeout=2.0), QUEUE, options)
        idle_since, last_clean = None, 0.0
        while True:
            try:
                items = q.lease(1)
                if not items:
                    if time.monotonic() - last_clean > 1:
                        q.clean()
                        last_clean = time.monotonic()
                    if (work / "stop-push").exists():
                        stats = q.stats()
                        if stats.pending + stats.processing + stats.delayed == 0:
                            idle_since = idle_since or time.monotonic()
                            if time.monotonic() - idle_since > 3:
                                return
                        else:
                            idle_since = None
                    time.sleep(0.05)
                    continue
                idle_since = None
                item = items[0]
                try:
                    (done,) = q.complete([item.id])
                except Unconfirmed as exc:
                    (done,) = exc.result  # type: ignore[misc]
                    if done.outcome == "completed":
                        out["ran"].append(item.id)
                    continue
                except Exception:
                    out["ran"].append(item.id)  # cut off: it may have been completed
                    raise
                if done.outcome == "completed":
                    out["confirmed"].append(item.id)
                    out["ran"].append(item.id)
            except Exception:
                time.sleep(0.1)
            if (work / "stop-all").exists():
                return

    def read_printed(stdout: Any) -> None:
        out["printed"].extend(json.loads(line)["id"] for line in stdout)

    def piped() -> None:
        """``rq-cli push QUEUE --with-ids -`` fed through a pipe for as long as it runs (one
        process, its bulk stream); another started where one exits (8, 69): the ids it
        printed are acknowledged."""
        env = {**os.environ, "RQ_CLI_WAIT_REPLICAS": str(setting),
               "RQ_CLI_WAIT_TIMEOUT": "1"}
        n = 0
        while not (work / "stop-push").exists():
            proc = subprocess.Popen(
                [sys.executable, "-m", "rq_cli", "--url", url, "--no-config", "push", QUEUE,
                 "--with-ids", "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, text=True, env=env)
            assert proc.stdin is not None and proc.stdout is not None
            reader = threading.Thread(target=read_printed, args=(proc.stdout,), daemon=True)
            reader.start()
            try:
                while proc.poll() is None and not (work / "stop-push").exists():
                    n += 1
                    proc.stdin.write(json.dumps({"id": f"e{args.client}{n}", "data": {}}) +
                                     "\n")
                    proc.stdin.flush()
                    time.sleep(0.005)
                proc.stdin.close()
            except BrokenPipeError:
                pass
            out["exits"].append(proc.wait())
            reader.join()

    threads = [threading.Thread(target=worker, daemon=True)]
    if "push" in args.roles:
        threads.append(threading.Thread(target=pusher, daemon=True))
    if "pipe" in args.roles:
        threads.append(threading.Thread(target=piped, daemon=True))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    (work / f"{args.client}.json").write_text(json.dumps(out))


# -- the run -----------------------------------------------------------------------------------

def run(args: argparse.Namespace) -> int:
    binary = server_binary(args.server)
    work = Path(tempfile.mkdtemp(prefix="rqp43-"))
    work.chmod(0o755)
    procs: list[subprocess.Popen[bytes]] = []
    net_down()
    try:
        net_up()
        procs = start_servers(binary, work)
        me = [sys.executable, "-m", "bench.partition", "--setting", args.setting,
              "--dir", str(work), "--backlog", str(args.backlog)]
        clients = {
            "c": subprocess.Popen(["ip", "netns", "exec", _ns("c"), *me, "--client", "c",
                                   "--roles", "push,pipe,work"]),
            "d": subprocess.Popen(["ip", "netns", "exec", _ns("d"), *me, "--client", "d",
                                   "--roles", "work"]),
        }
        time.sleep(args.before)  # (work under way on the healthy deployment)
        cut(True)
        t_cut = time.monotonic()
        promoted = wait(lambda: master_of() == _ip("r2"), args.hold + 30,
                        "the sentinels to promote r2")
        time.sleep(max(0.0, args.hold - (time.monotonic() - t_cut)))
        cut(False)
        demoted = wait(lambda: "role:slave" in ask("p", "INFO", "replication"), 90,
                       "the old primary to become a replica")
        time.sleep(args.after)
        (work / "stop-push").touch()
        try:
            for proc in clients.values():
                proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            (work / "stop-all").touch()
            for proc in clients.values():
                proc.wait(timeout=30)
        results = {name: json.loads((work / f"{name}.json").read_text()) for name in clients}
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
        net_down()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    acked, printed = set(results["c"]["acked"]), set(results["c"]["printed"])
    ran = {i for r in results.values() for i in r["ran"]}
    confirmed = Counter(i for r in results.values() for i in r["confirmed"])
    counts = {"setting": args.setting, "hold_s": args.hold,
              "promoted_after_s": round(promoted, 1), "demoted_after_heal_s": round(demoted, 1),
              "library": {"acknowledged": len(acked), "lost": len(acked - ran),
                          "unconfirmed": len(results["c"]["unconfirmed"]),
                          "failed": results["c"]["failed"]},
              "cli_pipe": {"printed": len(printed), "lost": len(printed - ran),
                           "exits": dict(Counter(results["c"]["exits"]))},
              "twice": sum(1 for n in confirmed.values() if n > 1)}
    print(json.dumps(counts))
    lost = counts["library"]["lost"] + counts["cli_pipe"]["lost"]  # type: ignore[index]
    return 0 if lost == 0 and counts["twice"] == 0 else 1


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.partition", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--setting", default="all", help="wait_replicas: all, 1, 0 (off)")
    parser.add_argument("--hold", type=float, default=12.0, help="seconds cut (12)")
    parser.add_argument("--before", type=float, default=5.0, help="seconds of work first")
    parser.add_argument("--after", type=float, default=3.0,
                        help="seconds of pushes after the old primary is demoted")
    parser.add_argument("--server", default=None, help="redis (default), valkey, or a path")
    parser.add_argument("--backlog", type=int, default=3000,
                        help="items pushed first, in batches: still queued at the cut, so "
                             "both sides' workers complete some of them (3000)")
    parser.add_argument("--keep", action="store_true", help="keep the logs' folder")
    parser.add_argument("--client", help=argparse.SUPPRESS)
    parser.add_argument("--roles", default="work", help=argparse.SUPPRESS)
    parser.add_argument("--dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        client(args)
        return
    sys.exit(run(args))


if __name__ == "__main__":
    main()
