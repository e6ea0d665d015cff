"""The ``rq-cli`` command line: a Typer app over :mod:`rq_cli.core.queue`.

``app`` is the Typer app; ``main`` runs it (ending in ``SystemExit``); ``run`` is the console
script (``rq-cli = "rq_cli.cli:run"``): ``main``, then an exit without the interpreter's teardown.
Modules by command family: push, leasing (lease/complete/fail/extend), inspect (stats/peek/
queues), maintain (clean/requeue-dead/purge/pause/resume), config_cmd, server_cmd.
"""

__all__ = ["app", "main", "run"]


def run() -> None:
    """The console script: Ctrl-C and SIGTERM held (:mod:`.signals`) before the imports
    that start-up spends its time in (this module imports nothing before), then
    :func:`rq_cli.cli.root.run`, which ends the process."""
    # Held from this line: a signal during the import of .signals (its own imports take a
    # few ms on a loaded machine) is only noted here, and handed to the hold. (_signal is
    # already imported by the interpreter's start-up: no import code runs for it.)
    import _signal  # type: ignore[import-not-found]

    early: list[int] = []
    for sig in (_signal.SIGINT, _signal.SIGTERM):
        _signal.signal(sig, lambda signum, frame: early.append(signum))
    from .signals import hold_until_command

    hold_until_command(early)
    from .root import run as run_app

    run_app()


def __getattr__(name: str) -> object:
    """``app`` and ``main``, imported when first asked for (``run`` must come first)."""
    if name in ("app", "main"):
        from . import root

        return getattr(root, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
