"""``python -m bench.push_signals URL [--tries N] [--rq-cli PATH]``: ``rq-cli push q -`` fed
by a pipe and stopped by SIGINT or SIGTERM at random moments (issue 43: a push stopped by
Ctrl-C once died of SIGSEGV inside hiredis). Each try starts the push with
``PYTHONFAULTHANDLER=1``, feeds it LINES lines through a pipe (kept open after them in half
the tries, so the push cannot finish; closed in the other half, so it may), sends the
signal at a moment drawn uniformly from 0 to LATEST seconds after the start (a second one
at once in one try in ten), and checks:

- exit 130 (one signal): one stderr line "exactly N items stored", N = the items the server
  holds = the lines the push printed;
- exit 130 (two signals): one line; the server holds at least what was printed;
- exit 0: the signal came after the push had finished; everything fed is stored and printed;
- killed by the signal itself, or Python's own KeyboardInterrupt traceback, with nothing
  stored and the traceback not past the hold (``rq_cli.cli.run``'s first call): the signal
  came before rq-cli could hold it (no program can handle that);
- anything else (a crash: -11 SIGSEGV, -6 SIGABRT; a traceback; a count that differs) is
  reported with its stderr.

It prints one JSON object: tries, exit statuses, and the failures. Use a server of its own:
each try flushes its database. Exit 1 if any try failed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from typing import Any

import redis

LINES = 60_000
LATEST = 1.5  # seconds: past the end of a push of LINES lines on a loaded 2-core machine
EXACT = re.compile(r"^rq-cli: interrupted: push: exactly (\d+) items? stored")
#: lines of a traceback that show start-up past the hold (rq_cli/cli/__init__.py ``run``)
PAST_THE_HOLD = ("from .root import run as run_app", "run_app()")


def one_try(url: str, command: list[str], rng: random.Random) -> tuple[str, dict[str, Any]]:
    """One push stopped at a random moment: (its kind of end, what was seen)."""
    r = redis.Redis.from_url(url)
    r.flushdb()
    sig = rng.choice([signal.SIGINT, signal.SIGTERM])
    at = rng.uniform(0, LATEST)
    keep_open = rng.random() < 0.5
    twice = rng.random() < 0.1
    env = {**os.environ, "PYTHONFAULTHANDLER": "1"}
    env = {k: v for k, v in env.items() if not k.startswith("RQ_CLI_") or k == "RQ_CLI_DEBUG"}
    proc = subprocess.Popen([*command, "--no-config", "--url", url, "push", "q", "-"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    assert proc.stdin and proc.stdout and proc.stderr
    done = threading.Event()  # the push has ended (the feeder stops holding the pipe)

    def feed() -> None:
        try:
            for start in range(0, LINES, 5000):
                proc.stdin.write(b"".join(b'{"n":%d}\n' % n
                                          for n in range(start, start + 5000)))
            proc.stdin.flush()
            if keep_open:
                done.wait()
        except (BrokenPipeError, OSError):
            pass
        finally:
            with contextlib.suppress(OSError):
                proc.stdin.close()

    printed: list[int] = []
    feeder = threading.Thread(target=feed)
    reader = threading.Thread(target=lambda: printed.append(sum(1 for _ in proc.stdout)))
    errs: list[bytes] = []
    err_reader = threading.Thread(target=lambda: errs.append(proc.stderr.read()))
    for t in (feeder, reader, err_reader):
        t.start()
    time.sleep(at)  # (the random moment is the point: this is no wait for an event)
    proc.send_signal(sig)
    if twice:
        proc.send_signal(sig)
    try:
        code = proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = proc.wait()
        done.set()
        return "hung", {"sig": sig, "at": at}
    done.set()
    for t in (feeder, reader, err_reader):
        t.join()
    err = errs[0].decode("utf-8", "replace")
    stored = int(r.llen("q:queue"))  # type: ignore[arg-type]
    seen = {"sig": signal.Signals(sig).name, "at": round(at, 3), "open": keep_open,
            "twice": twice, "code": code, "printed": printed[0], "stored": stored,
            "stderr": err[-2000:]}
    if code == -sig or (code == 1 and err.rstrip().endswith("KeyboardInterrupt")
                        and "rq-cli:" not in err):
        if not any(line in err for line in PAST_THE_HOLD) and stored == printed[0] == 0:
            return "before the hold", seen
        return "failed", seen
    if code == 0:
        ok = stored == printed[0] == LINES and not err
        return ("finished first" if ok else "failed"), seen
    if code == 130 and "Traceback" not in err and err.count("\n") == 1:
        if twice:
            return ("130, twice" if stored >= printed[0] else "failed"), seen
        said = EXACT.search(err)
        if said and int(said.group(1)) == stored == printed[0]:
            return "130, exact", seen
    return "failed", seen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url")
    parser.add_argument("--tries", type=int, default=200)
    parser.add_argument("--rq-cli", default=None, help="the rq-cli to run (default: this "
                        "Python's -m rq_cli)")
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    command = [args.rq_cli] if args.rq_cli else [sys.executable, "-m", "rq_cli"]
    rng = random.Random(args.seed)
    kinds: Counter[str] = Counter()
    codes: Counter[int] = Counter()
    failures: list[dict[str, Any]] = []
    began = time.monotonic()
    for _ in range(args.tries):
        kind, seen = one_try(args.url, command, rng)
        kinds[kind] += 1
        codes[seen.get("code", "hung")] += 1
        if kind in ("failed", "hung"):
            failures.append(seen)
            print(json.dumps(seen), file=sys.stderr, flush=True)
    print(json.dumps({"tries": args.tries, "seconds": round(time.monotonic() - began),
                      "python": sys.version.split()[0], "versions": _versions(command),
                      "ends": dict(kinds), "exit codes": {str(k): v for k, v in codes.items()},
                      "failures": len(failures)}))
    return 1 if failures else 0


def _versions(command: list[str]) -> str:
    python = command[0] if command[0].endswith(("python", "python3")) else \
        os.path.join(os.path.dirname(command[0]), "python")
    try:
        return subprocess.run([python, "-c", "import redis, hiredis, orjson; print("
                               "'redis', redis.__version__, 'hiredis', hiredis.__version__,"
                               " 'orjson', orjson.__version__)"], capture_output=True,
                              text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"


if __name__ == "__main__":
    sys.exit(main())
