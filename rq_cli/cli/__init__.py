"""The ``rq-cli`` command line: a Typer app over :mod:`rq_cli.queue`.

``app`` is the Typer app; ``main`` the console script (``rq-cli = "rq_cli.cli:main"``).
Modules by command family: push, leasing (lease/complete/fail/extend), inspect (stats/peek/
queues), maintain (clean/requeue-dead/purge/pause/resume), config_cmd, server_cmd.
"""

from .root import app, main

__all__ = ["app", "main"]
