"""What a step costs the server, by the server's own clocks (tests/core/test_far_end.py and
``python -m bench.farend``): its script calls (INFO commandstats), the longest of them
(SLOWLOG) and the server's CPU time meanwhile (INFO cpu, main thread).

The SLOWLOG logs only calls of LOGGED_US or more: a script's own commands are logged too,
and logging each of them (about fifteen per failed id) would stretch the calls it measures
(a fail of 100 ids: 2 ms with them unlogged, 7-9 ms with all logged); a call under 1 ms is
far inside any budget these checks hold.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

T = TypeVar("T")
LOGGED_US = 1000
LOG_LEN = 10_000
SCRIPT_COMMANDS = ("fcall", "evalsha", "eval")


@dataclass
class Spent(Generic[T]):
    result: T = field(repr=False)
    #: script calls made (commandstats)
    calls: int
    #: the longest SLOWLOG duration of a script call (us), 0 if none took LOGGED_US
    longest_us: int
    #: the server's CPU time (us) meanwhile
    cpu_us: float


def _script_calls(r: Any) -> int:
    stats = r.info("commandstats")
    return sum(int(stats.get(f"cmdstat_{c}", {}).get("calls", 0)) for c in SCRIPT_COMMANDS)


def _cpu_us(r: Any) -> float:
    cpu = r.info("cpu")
    user = cpu.get("used_cpu_user_main_thread", cpu["used_cpu_user"])
    sys_ = cpu.get("used_cpu_sys_main_thread", cpu["used_cpu_sys"])
    return (float(user) + float(sys_)) * 1e6


def spent(r: Any, step: Callable[[], T]) -> Spent[T]:
    """Run ``step()`` (its calls on the server of client ``r``, nobody else's meanwhile) and
    say what it cost the server. The SLOWLOG settings are restored after."""
    old = r.config_get("slowlog-*")
    r.config_set("slowlog-log-slower-than", LOGGED_US)
    r.config_set("slowlog-max-len", LOG_LEN)
    try:
        r.slowlog_reset()
        calls, cpu = _script_calls(r), _cpu_us(r)
        result = step()
        cpu = _cpu_us(r) - cpu
        calls = _script_calls(r) - calls
        logged = r.slowlog_get(LOG_LEN)
    finally:
        for k in ("slowlog-log-slower-than", "slowlog-max-len"):
            r.config_set(k, old[k.encode()] if k.encode() in old else old[k])
    scripts = [int(e["duration"]) for e in logged
               if e["command"].split(b" ", 1)[0].lower().decode() in SCRIPT_COMMANDS]
    return Spent(result, calls, max(scripts, default=0), cpu)
