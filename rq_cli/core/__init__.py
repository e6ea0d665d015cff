"""The engine: a reliable work queue in Redis/Valkey, one Lua script per atomic operation.

The public API is :class:`~rq_cli.core.queue.WorkQueue` (one queue on one server),
:func:`~rq_cli.core.queue.lease_many` (several queues) and the result types of
:mod:`rq_cli.core.types` and :mod:`rq_cli.core.reports`, each imported from the module that
defines it (one import path per name: no re-exports). Those modules, the words of
:mod:`rq_cli.core.codes`, and error groups, filters and the history are at this package's
top (the import paths docs/library.md gives); each part of the engine is a folder, lowest
layer first:

- ``contract``: what Python, the Lua scripts and the peer clients agree on, each once (the
  key schema, fields, counts, the scripts' specs, limits, environment variables).
- ``scripting``: the Lua sources (``lua/``, one file per operation), built and called.
- ``operations``: one queue's operations behind WorkQueue (reads, repairs, limits, ...).
- ``pushing``: bulk push; ``sharding``: one queue over N queues; ``fleet``: many queues.

This package imports neither Typer nor rich; importing it loads none of its modules.
"""
