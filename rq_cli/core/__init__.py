"""The engine: a reliable work queue in Redis/Valkey, one Lua script per atomic operation.

The public API is :class:`WorkQueue` (one queue on one server), :func:`lease_many` (several
queues) and the result types of :mod:`rq_cli.core.types`. Inside the package:

- ``keys``: the key schema, defined once; the Lua prelude's key names are generated from it.
- ``limits``: every limit and batch size.
- ``scripts``: the Lua sources (``lua/``), one file per operation.
- ``queue``: WorkQueue; ``bulk``: the pipelined bulk push; ``deep``: deep clean (SCAN side).
- ``types`` / ``reports``: plain result dataclasses; ``discover``: finding queues by SCAN.
- ``util``: small conversions shared by the modules above.

This package imports neither Typer nor rich, and loads its modules on first use (start-up
time of the CLI is a budget of its own).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .queue import WorkQueue, lease_many

__all__ = ["WorkQueue", "lease_many"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import queue

        return getattr(queue, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
