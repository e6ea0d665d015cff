"""The ``rq-cli`` command line: a Typer app over :mod:`rq_cli.queue`.

``app`` is the Typer app; ``main`` runs it (ending in ``SystemExit``); ``run`` is the console
script (``rq-cli = "rq_cli.cli:run"``): ``main``, then an exit without the interpreter's teardown.
Modules by command family: push, leasing (lease/complete/fail/extend), inspect (stats/peek/
queues), maintain (clean/requeue-dead/purge/pause/resume), config_cmd, server_cmd.
"""

from .root import app, main, run

__all__ = ["app", "main", "run"]
