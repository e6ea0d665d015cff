"""Ctrl-C and SIGTERM in the ``rq-cli`` process: held from its first line until a command
can say what it did; in ``push``, only ever recorded, and acted on at the push's own safe
points.

:func:`hold_until_command` runs first (``rq_cli.cli.run``, before Typer, redis-py and the
command are imported): a Ctrl-C during start-up is remembered, not raised in the middle of an
import (a traceback). :func:`release` ends the hold where a command starts; a signal held
until then is raised there as a KeyboardInterrupt, which the command reports (``rq-cli:
interrupted``, exit 130); SIGTERM then keeps its default (the process ends at once).

``push`` never ends the hold (:func:`record_stops`): its handler only records the signal.
A handler that raises runs wherever the interpreter happens to be, also inside C code that
called back into Python (hiredis packing a command), and C code that does not expect the
error reads a NULL: a push stopped by Ctrl-C once died of SIGSEGV there. So nothing is
raised from a handler; the push asks :func:`stopping` at its safe points (between batches,
where what was stored is known exactly: ``core.pushing.bulk.stream``'s ``stop``) and raises
KeyboardInterrupt there itself. A read of stdin that waits for input (a pipe whose writer is
slow or idle) must end too: :func:`stoppable` reads stdin only once ``select`` says it has
input, waiting on stdin and on the wakeup pipe (``signal.set_wakeup_fd``) together, so a
signal ends the wait. A second signal means "now": the handler writes the push's last words
(what it knows was stored) to stderr with ``os.write`` and ends the process with
``os._exit(130)``, which returns to no C code either.

Only the main thread of the real entry point holds anything: under ``CliRunner`` (tests),
or in a program that imports rq-cli, the handlers are left as they are.

This module imports nothing but the standard library (it runs before everything else).
"""

from __future__ import annotations

import os  # (already imported by the interpreter's start-up)

TYPE_CHECKING = False  # (typing and collections cost start-up, before the hold: see run)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

#: the signals that stop a command
STOPS = (2, 15)  # SIGINT, SIGTERM (POSIX numbers: this module imports ``signal`` late)

_held: list[int] = []  # signals received while held (start-up; push: all along)
#: a recording command's words for a second signal, which ends it at once (record_stops)
_last_words: list[Callable[[], str]] = []
_wakeup: list[int] = []  # the read end of the wakeup pipe, while one is set (record_stops)
#: bytes read from stdin at a time by stoppable
READ_SIZE = 1 << 20


def _remember(signum: int, frame: object) -> None:
    _held.append(signum)
    if len(_held) > 1 and _last_words:
        _end_now()


def _end_now() -> None:
    """A second signal: the last words on stderr and exit 130, now (from the handler: both
    calls end in the kernel, no C code of a library runs after them)."""
    try:
        said = _last_words[0]()
    except Exception:  # (the words are best effort; the exit is not)
        said = "interrupted twice"
    os.write(2, f"rq-cli: {said}\n".encode("utf-8", "replace"))
    os._exit(130)


def hold_until_command(early: list[int] | None = None) -> None:
    """Hold Ctrl-C and SIGTERM until :func:`release` (the entry point, first thing);
    ``early``: the signals the entry point noted while this module was imported (they count
    as held)."""
    # signal's C half: `signal` itself imports enum (10-25 ms of start-up)
    import _signal  # type: ignore[import-not-found]

    for sig in (_signal.SIGINT, _signal.SIGTERM):
        _signal.signal(sig, _remember)
    if early:  # (read once the handler above notes any later one)
        _held[:0] = early


def release() -> None:
    """End the start-up hold (a command starts): Ctrl-C raises KeyboardInterrupt again, and
    SIGTERM ends the process as by default. A signal held so far is delivered now. Without
    a hold (tests), nothing changes."""
    import signal

    if signal.getsignal(signal.SIGINT) is not _remember:
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if not _held:
        return
    first = _held[0]
    _held.clear()
    if first == signal.SIGTERM:
        signal.raise_signal(signal.SIGTERM)  # (the default: the process ends here)
    raise KeyboardInterrupt


def record_stops(last_words: Callable[[], str]) -> None:
    """Keep the start-up hold for the whole command (``push``): Ctrl-C and SIGTERM are only
    recorded (:func:`stopping` says so; a signal of start-up counts too), a wait for stdin
    through :func:`stoppable` ends at one, and a second one ends the process at once with
    ``last_words()`` on stderr (exit 130). Without a hold (tests), nothing changes."""
    import signal

    if signal.getsignal(signal.SIGINT) is not _remember:
        return
    _last_words[:] = [last_words]
    if not _wakeup:
        read, write = os.pipe()
        os.set_blocking(read, False)
        os.set_blocking(write, False)
        signal.set_wakeup_fd(write, warn_on_full_buffer=False)
        _wakeup.append(read)
    if len(_held) > 1:  # (two already in start-up)
        _end_now()


def stopping() -> bool:
    """Whether a Ctrl-C or SIGTERM was recorded (:func:`record_stops`; in start-up too)."""
    return bool(_held)


def stoppable(stream: Iterable[bytes]) -> Iterable[bytes]:
    """The lines of ``stream`` (stdin), read so that a signal ends a wait for input with a
    KeyboardInterrupt, raised here (between two reads), not in a handler: ``stream``'s file
    descriptor is read only once ``select`` says it has input, and the wait is on the
    wakeup pipe too. ``stream`` itself where nothing is recorded (no :func:`record_stops`)
    or it has no file descriptor (tests)."""
    try:
        fd = stream.fileno()  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return stream
    if not _wakeup:
        return stream
    return _lines(fd, _wakeup[0])


def _lines(fd: int, wake: int) -> Iterator[bytes]:
    import io
    import select

    parts: list[bytes] = []  # the start of a line not ended yet
    while True:
        # (a signal's byte in the wakeup pipe means its handler runs at the next check of
        # the interpreter's, at latest on this loop's jump back: it has recorded it here)
        if _held:
            raise KeyboardInterrupt
        ready = select.select([fd, wake], [], [])[0]
        if wake in ready:
            _empty(wake)
            continue
        block = os.read(fd, READ_SIZE)
        if not block:  # the end of the input
            if parts:
                yield b"".join(parts)
            return
        cut = block.rfind(b"\n") + 1
        if not cut:
            parts.append(block)
            continue
        if parts:
            parts.append(block[:cut])
            head = b"".join(parts)
        else:
            head = block[:cut]
        parts = [block[cut:]] if cut < len(block) else []
        yield from io.BytesIO(head).readlines()


def _empty(fd: int) -> None:
    try:
        while os.read(fd, 512):
            pass
    except BlockingIOError:
        pass


def _interrupting(sig: int) -> bool:
    import _signal

    return _signal.getsignal(sig) is _signal.default_int_handler


class interrupt_deferred:  # (lower case: it reads as a function, `with interrupt_deferred():`)
    """Hold a Ctrl-C back until the block ends, so that a write and its count stay
    together (the filtered commands, ``cli/filtered.py``: a step moved is a step printed;
    ``push`` holds every signal all along instead: :func:`record_stops`). A second signal
    interrupts at once (a write to a reader that stopped reading would otherwise hold the
    first one back forever). Outside the main thread, or with SIGINT handled elsewhere,
    this does nothing. The handlers are read and set through signal's C half,
    ``_signal``, whose plain numbers skip ``signal``'s enum conversions.
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
