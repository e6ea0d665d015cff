"""The engine: a reliable work queue in Redis/Valkey, one Lua script per atomic operation.

The public API is :class:`~rq_cli.core.queue.WorkQueue` (one queue on one server),
:func:`~rq_cli.core.queue.lease_many` (several queues) and the result types of
:mod:`rq_cli.core.types`, each imported from the module that defines it (one import path
per name: no re-exports). Inside the package:

- ``keys``: the key schema, defined once; the Lua prelude's key names are generated from it.
- ``limits``: every limit and batch size.
- ``scripts``: the Lua sources (``lua/``), one file per operation.
- ``queue``: WorkQueue; ``bulk``: the pipelined bulk push; ``deep``: deep clean (SCAN side).
- ``types`` / ``reports``: plain result dataclasses; ``discover``: finding queues by SCAN.
- ``util``: small conversions shared by the modules above.

This package imports neither Typer nor rich; importing it loads none of its modules.
"""
