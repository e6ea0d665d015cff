"""Fleet-wide limits (docs/DESIGN.md section 9): a queue's rate and in-flight cap, kept on the
server in ``P:limits`` and applied by the lease script, so every rq-cli client and worker
obeys them with nothing to keep in step.

:func:`parse_rate` reads a rate as a user writes it (``20/s``, ``300/m``, ``1000/h``);
:class:`Limiting` is WorkQueue's part that sets, clears and shows the limits (one script
call, ``lua/limit.lua``); :class:`QueueLimits` is what it shows.

This module imports neither Typer nor rich.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass
from typing import Any

from ...errors import ParameterError
from ..codes import LEASE_CAPPED, LEASE_LIMITED
from ..contract.keys import Keys
from ..contract.limits import MAX_BURST, MAX_DELAY, MAX_DELAY_TEXT, MAX_IN_FLIGHT
from ..contract.util import check_tenant, text
from .audit import note
from .base import QueueBase

#: A rate's units: seconds per unit (``N/s``, ``N/m``, ``N/h``).
RATE_UNITS = {"s": 1, "m": 60, "h": 3600}
RATE_FORMS = "N/s, N/m or N/h"
_RATE = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*/\s*([a-z]+)\s*")


@dataclass(frozen=True)
class Rate:
    """A rate: ``text`` as written (``20/s``) and its emission interval (µs per item)."""

    text: str
    interval_us: int

    @property
    def per_second(self) -> float:
        return 1e6 / self.interval_us


def parse_rate(value: str) -> Rate:
    """``N/s``, ``N/m`` or ``N/h`` (N a positive number) as a :class:`Rate`, or UsageError."""
    m = _RATE.fullmatch(value.lower())
    if not m or m.group(2) not in RATE_UNITS:
        raise ParameterError("rate", f"is {RATE_FORMS} (items per second, minute or hour), "
                                     f"not {value!r}")
    n = float(m.group(1))
    if not n > 0:
        raise ParameterError("rate", f"must be more than 0 items, not {value!r}")
    interval = round(RATE_UNITS[m.group(2)] * 1e6 / n)
    if interval < 1:
        raise ParameterError("rate", f"is at most 1000000/s, not {value!r}")
    if interval > MAX_DELAY * 1e6:
        raise ParameterError("rate", f"must admit an item at least every {MAX_DELAY_TEXT}, "
                                     f"not {value!r}")
    return Rate(f"{m.group(1)}/{m.group(2)}", interval)


def check_burst(burst: int) -> int:
    if not 1 <= burst <= MAX_BURST:
        raise ParameterError("burst", f"must be from 1 to {MAX_BURST}, not {burst}")
    return burst


def check_max_in_flight(cap: int) -> int:
    """0 (no cap) to MAX_IN_FLIGHT, or UsageError."""
    if not 0 <= cap <= MAX_IN_FLIGHT:
        raise ParameterError("max_in_flight", f"must be from 1 to {MAX_IN_FLIGHT} (0: no cap), "
                                              f"not {cap}")
    return cap


@dataclass(frozen=True)
class QueueLimits:
    """A queue's limits as ``limit`` shows them (None: not set), with the leases the cap
    counts now (``in_flight``)."""

    rate: str | None
    interval_us: int | None
    burst: int | None
    max_in_flight: int | None
    in_flight: int

    @property
    def per_second(self) -> float | None:
        return None if self.interval_us is None else 1e6 / self.interval_us

    @property
    def any(self) -> bool:
        return self.rate is not None or self.max_in_flight is not None


def _number(value: object) -> int | None:
    return None if value is None or value is False else int(value)  # type: ignore[call-overload]


#: What held a lease back (:attr:`Limiting.held_back`): the rate, or the in-flight cap.
HELD_BY = {LEASE_LIMITED: "rate", LEASE_CAPPED: "max_in_flight"}


def held_back(status: int, due_in_ms: int) -> tuple[str, float] | None:
    """A lease's status, and its ms until the next lease can succeed (the server's reply):
    what held it back ("rate" or "max_in_flight") and when it can succeed (epoch seconds, by
    this client's clock), or None when the limits did not hold it back."""
    by = HELD_BY.get(status)
    return None if by is None else (by, time.time() + max(due_in_ms, 0) / 1000)


def wait_held_back(client: Any, keys: Keys, status: int, due_in_ms: int,
                   seconds: float) -> bool:
    """Wait up to ``seconds`` after a lease the limits held back (``status``, ``due_in_ms``:
    its reply): the rate, exactly until the next lease can succeed (nothing can come
    sooner: no polling, no oversleeping); the cap, until a complete frees a place (its
    token on P:freed) or, at the latest, the earliest lease runs out. True: lease again."""
    wait = min(seconds, max(due_in_ms, 0) / 1000)
    if status == LEASE_LIMITED:
        if wait > 0:
            time.sleep(wait)
        return True
    return client.blpop([keys.freed], max(round(wait, 3), 0.01)) is not None


class Limiting(QueueBase):
    """WorkQueue's part that sets, clears and shows the queue's fleet-wide limits."""

    #: set by each lease: what held it back and when the next can succeed (held_back())
    held_back: tuple[str, float] | None = None

    def set_limits(self, *, rate: Rate | None = None, burst: int | None = None,
                   max_in_flight: int | None = None, tenant: str | None = None,
                   ) -> QueueLimits:
        """Set the rate (with its burst: 1 unless given) and/or the in-flight cap (0
        removes it); a limit not given stays as it is. With ``tenant`` (fair queues): that
        tenant's own rate (a tenant's own cap is not built). One script call."""
        if burst is not None and rate is None:
            raise ParameterError("burst", "goes with a rate (the burst of that rate)")
        if tenant is not None and max_in_flight is not None:
            raise ParameterError("max_in_flight", "is the queue's only: a tenant has a rate of "
                                                  "its own, not a cap")
        return self._limit("set", rate, check_burst(burst or 1),
                           None if max_in_flight is None else check_max_in_flight(max_in_flight),
                           tenant)

    def clear_limits(self, tenant: str | None = None) -> QueueLimits:
        """Remove every limit of the queue (with ``tenant``: that tenant's own rate only)."""
        return self._limit("clear", tenant=tenant)

    def limits(self, tenant: str | None = None) -> QueueLimits:
        """The queue's limits (with ``tenant``: its own rate, and the queue's cap), and the
        leases the cap counts now."""
        return self._limit("show", tenant=tenant)

    def _limit(self, mode: str, rate: Rate | None = None, burst: int = 1,
               max_in_flight: int | None = None, tenant: str | None = None) -> QueueLimits:
        fields, _ = self.decoded("limit", {
            "mode": mode, "tenant": "" if tenant is None else check_tenant(tenant),
            "rate": rate.text if rate else "",
            "interval_us": rate.interval_us if rate else "", "burst": burst,
            "max_in_flight": "" if max_in_flight is None else max_in_flight})
        if mode != "show":  # (the audit trail, if open: the queues or shards written)
            note("limits", 1)
        return QueueLimits(text(fields["rate"]) or None, _number(fields["interval_us"]),
                           _number(fields["burst"]), _number(fields["max_in_flight"]),
                           int(fields["in_flight"]))


def share(total: int, shards: int, index: int) -> int:
    """Shard ``index``'s whole share of ``total`` over ``shards`` shards: the shares add up to
    ``total`` (the first ``total % shards`` shards get one more)."""
    return total // shards + (1 if index < total % shards else 0)


def rate_share(rate: Rate, shards: int) -> Rate:
    """One shard's share of ``rate`` over ``shards`` shards (the interval times N)."""
    return Rate(rate.text, min(rate.interval_us * shards, math.floor(MAX_DELAY * 1e6)))
