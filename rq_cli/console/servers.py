"""What the overview says about each server, without Textual: its memory and ``maxmemory``
headroom, and an outage as one line naming the queues it affects (re-exported by
model.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Memory:
    """A server's memory in use and its ``maxmemory`` (0: none set)."""

    server: str  # its URL, masked
    used: int
    maxmemory: int

    def said(self) -> str:
        if not self.maxmemory:
            return f"{self.server}: {mib(self.used)} used, no maxmemory (no limit)"
        left = self.maxmemory - self.used
        return (f"{self.server}: {mib(self.used)} of maxmemory {mib(self.maxmemory)} "
                f"({max(0, left) / self.maxmemory:.0%} headroom)")

    @property
    def low(self) -> bool:
        """Under a tenth of ``maxmemory`` left: writes may soon be refused or evicted."""
        return bool(self.maxmemory) and self.maxmemory - self.used < self.maxmemory / 10


def mib(n: int) -> str:
    """``n`` bytes in MiB (a decimal under 10)."""
    value = n / 1048576
    return f"{value:,.1f} MiB" if value < 10 else f"{value:,.0f} MiB"


@dataclass
class Outage:
    """A server's error, and the queues it affects."""

    server: str  # its URL, masked
    error: str
    queues: list[str]

    def said(self, shown: int = 5) -> str:
        names = ", ".join(self.queues[:shown])
        if len(self.queues) > shown:
            names += f" and {len(self.queues) - shown:,} more"
        what = "queue" if len(self.queues) == 1 else f"{len(self.queues):,} queues"
        return f"{self.server}: {self.error} ({what}: {names})"
