"""The one way a test waits for an event another process makes: poll a condition until
it holds, with a generous bound that only stops a hang (STYLE habit 45: tests wait on
events, never on the machine's speed)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

#: The default bound, seconds: generous, for a loaded 2-core machine; it only ends a hang.
BOUND = 60.0


def wait_for(condition: Callable[[], Any], timeout: float = BOUND,
             what: str = "the condition", *, step: float = 0.05,
             ignore: tuple[type[BaseException], ...] = ()) -> Any:
    """``condition()``'s value once it is true, polled every ``step`` seconds; an
    AssertionError naming ``what`` after ``timeout`` seconds. An exception of ``ignore``
    (a server not up yet, a failover under way) counts as not yet."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = condition()
        except ignore:
            value = None
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(step)


def clear_of_a_minute_turn(r: Any, seconds: float) -> None:
    """Return once the server's clock has at least ``seconds`` left in its minute: a test
    that counts the history's once-a-minute snapshots (lua/_history.lua) then runs in one
    minute. (A generous ``seconds``: it bounds how long the test may take, not a guess of
    how fast it runs; at most a minute's wait.)"""
    now_s, micros = r.time()
    left = 60 - (now_s % 60 + micros / 1e6)
    if left < seconds:
        time.sleep(left + 0.05)
