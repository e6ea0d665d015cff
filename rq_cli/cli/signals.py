"""Ctrl-C and SIGTERM in the ``rq-cli`` process: held from its first line until a command
can say what it did, and held across a write and its count.

:func:`hold_until_command` runs first (``rq_cli.cli.run``, before Typer, redis-py and the
command are imported): a Ctrl-C during start-up is remembered, not raised in the middle of an
import (a traceback). :func:`release` ends the hold where a command starts; a signal held
until then is raised there as a KeyboardInterrupt, which the command reports (``push``: how
many items were stored, 0 included; others: ``rq-cli: interrupted``, exit 130). A command
that stops on SIGTERM as on Ctrl-C (``push``: ``timeout`` and systemd stop it with SIGTERM)
says so to :func:`release`; elsewhere SIGTERM keeps its default (the process ends at once).

Only the main thread of the real entry point holds anything: under ``CliRunner`` (tests),
or in a program that imports rq-cli, the handlers are left as they are.

This module imports nothing but the standard library (it runs before everything else).
"""

from __future__ import annotations

#: the signals that stop a command
STOPS = (2, 15)  # SIGINT, SIGTERM (POSIX numbers: this module imports ``signal`` late)

_held: list[int] = []  # signals received while held (start-up)


def _remember(signum: int, frame: object) -> None:
    _held.append(signum)


def hold_until_command() -> None:
    """Hold Ctrl-C and SIGTERM until :func:`release` (the entry point, first thing)."""
    # signal's C half: `signal` itself imports enum (10-25 ms of start-up)
    import _signal  # type: ignore[import-not-found]

    for sig in (_signal.SIGINT, _signal.SIGTERM):
        _signal.signal(sig, _remember)


def interrupt(signum: int, frame: object) -> None:
    """SIGTERM's handler in a command that stops on it as on Ctrl-C."""
    raise KeyboardInterrupt


def release(*, sigterm_interrupts: bool = False) -> None:
    """End the start-up hold (a command starts): Ctrl-C raises KeyboardInterrupt again, and
    SIGTERM too with ``sigterm_interrupts``, else it ends the process as by default. A
    signal held so far is delivered now. Without a hold (tests), nothing changes."""
    import signal

    if signal.getsignal(signal.SIGINT) is not _remember:
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, interrupt if sigterm_interrupts else signal.SIG_DFL)
    if not _held:
        return
    first = _held[0]
    _held.clear()
    if first == signal.SIGTERM and not sigterm_interrupts:
        signal.raise_signal(signal.SIGTERM)  # (the default: the process ends here)
    raise KeyboardInterrupt


def _interrupting(sig: int) -> bool:
    import _signal

    handler = _signal.getsignal(sig)
    return handler is _signal.default_int_handler or handler is interrupt


class interrupt_deferred:  # (lower case: it reads as a function, `with interrupt_deferred():`)
    """Hold a Ctrl-C (and a SIGTERM that interrupts) back until the block ends, so that a
    write and its count stay together.

    ``push`` says how many items it printed when interrupted; a Ctrl-C between printing a
    batch and counting it made the two differ. A second signal interrupts at once (a write
    to a reader that stopped reading would otherwise hold the first one back forever).
    Outside the main thread, or with SIGINT handled elsewhere, this does nothing.

    It runs around every batch of a push (three times a batch): the handlers are read and
    set through signal's C half, ``_signal``, whose plain numbers skip ``signal``'s enum
    conversions (a tenth of a push's client CPU at 200,000 lines, bench case ``push``).
    """

    def __init__(self) -> None:
        self.held: list[int] = []
        self.before: dict[int, object] = {}

    def __enter__(self) -> None:
        import _signal
        import threading

        if threading.current_thread() is not threading.main_thread() or \
                _signal.getsignal(_signal.SIGINT) is not _signal.default_int_handler:
            return
        self.before = {s: _signal.getsignal(s) for s in STOPS if _interrupting(s)}
        held = self.held

        def hold(signum: int, frame: object) -> None:
            if held:
                raise KeyboardInterrupt
            held.append(signum)

        hold.held = held  # type: ignore[attr-defined]  # (for interruptible_sleep)
        for sig in self.before:
            _signal.signal(sig, hold)

    def __exit__(self, kind: object, *rest: object) -> None:
        import _signal

        for sig, handler in self.before.items():
            _signal.signal(sig, handler)
        if self.held and kind is None:  # (an error leaving the block goes on as it is)
            raise KeyboardInterrupt


def interruptible_sleep(seconds: float) -> None:
    """``time.sleep``, which a Ctrl-C ends at once even inside :func:`interrupt_deferred`:
    for a wait before anything is done (``--rate``), where stopping loses nothing. A Ctrl-C
    held back already ends it before it starts."""
    import signal
    import time

    handler = signal.getsignal(signal.SIGINT)
    held = getattr(handler, "held", None)
    if held is None:  # not deferred: a plain sleep (Ctrl-C ends it as usual)
        time.sleep(seconds)
        return
    if held:
        raise KeyboardInterrupt
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        time.sleep(seconds)
    finally:
        signal.signal(signal.SIGINT, handler)
