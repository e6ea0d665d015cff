"""One exception hierarchy for rq-cli; each class carries its process exit code.

The command line maps these to a one-line message on stderr and the exit code in one
place (``rq_cli.cli.main``). The library raises them too, so Python callers can catch
``RqError`` for everything rq-cli itself decides is wrong.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping


class ExitCode(enum.IntEnum):
    """Process exit codes. The manual's Exit codes page (docs/reference/exit-codes.md) and
    ``man rq-cli`` list them, generated from this enum: each code's comment here is its
    one-line meaning there (scripts/manual.py)."""

    OK = 0
    INTERNAL = 1  # a bug: please report it (RQ_CLI_DEBUG=1 shows the traceback)
    USAGE = 2  # bad arguments or options (Typer/Click's own code)
    NOTHING = 3  # lease found nothing in time; no such live item (complete, ...) or batch
    LEASE_LOST = 4  # another session holds the lease, or the lease expired (extend)
    BREACHED = 5  # stats --check: past a threshold; doctor: a check failed; wait: an item died
    UNKNOWN = 6  # stats --check, doctor: a server could not be reached (the state is unknown)
    WARNED = 7  # doctor: warnings, and no check failed
    UNCONFIRMED = 8  # a write made, not confirmed by the replicas (wait_replicas) in time
    DATA = 65  # bad input (EX_DATAERR): invalid JSON, bad id, ...
    UNAVAILABLE = 69  # server unreachable or refusing (EX_UNAVAILABLE): auth, wrong key type
    TEMPFAIL = 75  # try again later (EX_TEMPFAIL): the queue's limits, work --name in use;
    # wait --timeout ran out
    CONFIG = 78  # config file error (EX_CONFIG)
    BROKEN_PIPE = 141  # stdout was closed early (``| head``): silent, like any Unix tool
    INTERRUPTED = 130  # Ctrl-C


class RqError(Exception):
    """Base of every error rq-cli raises on purpose. ``str(err)`` is the one-line message."""

    exit_code: ExitCode = ExitCode.INTERNAL


class UsageError(RqError):
    """Arguments that make no sense together, or out of range."""

    exit_code = ExitCode.USAGE


class BadInputError(RqError):
    """Input data (stdin lines, ids, payloads) that cannot be accepted."""

    exit_code = ExitCode.DATA

    def __init__(self, message: str, *, line: int | None = None) -> None:
        super().__init__(f"line {line}: {message}" if line is not None else message)
        self.line = line


class ConfigError(RqError):
    """The config file is unreadable, malformed or has unknown keys."""

    exit_code = ExitCode.CONFIG


class ServerError(RqError):
    """The server cannot be reached, refuses us (auth, ACL), or holds a key of the wrong type."""

    exit_code = ExitCode.UNAVAILABLE


class WrongTypeError(ServerError):
    """A key of the queue holds a value of the wrong type (for example a string where a list is)."""


class ClusterError(ServerError):
    """The queue cannot be used on this cluster as configured (for example an untagged prefix)."""


class NothingToDo(RqError):
    """Nothing was available (lease) or no such live item (complete, fail, extend)."""

    exit_code = ExitCode.NOTHING


class LeaseLost(RqError):
    """The lease is held by another session, or has expired."""

    exit_code = ExitCode.LEASE_LOST


class Interrupted(RqError):
    """Ctrl-C, with something to say about what was done before it."""

    exit_code = ExitCode.INTERRUPTED


class ThresholdBreached(RqError):
    """``stats --check``: at least one queue is past one of its thresholds."""

    exit_code = ExitCode.BREACHED


class CheckFailed(ThresholdBreached):
    """``doctor``: at least one check failed."""


class CheckUnknown(RqError):
    """``stats --check``, ``doctor``: a server could not be reached, so nothing is known."""

    exit_code = ExitCode.UNKNOWN


class CheckWarned(RqError):
    """``doctor``: warnings, and no check failed."""

    exit_code = ExitCode.WARNED


class NameInUse(RqError):
    """``work --name``: the name is held by a live worker."""

    exit_code = ExitCode.TEMPFAIL


class BatchFailed(ThresholdBreached):
    """``wait``: the batch is done, and at least one of its items is dead."""


class TimedOut(RqError):
    """``wait --timeout``: the batch was not done in time."""

    exit_code = ExitCode.TEMPFAIL


class HeldBack(RqError):
    """``lease``: the queue's limits (its rate, its in-flight cap) leased nothing now."""

    exit_code = ExitCode.TEMPFAIL


class Unconfirmed(RqError):
    """A write the server made but the replicas (``wait_replicas``) or the disk
    (``wait_fsync``) did not confirm in time: neither success nor failure. It may survive a
    failover or not; nothing was retried. ``ids``: the items of the write not confirmed
    (push: to push again with their ids); ``reply``: the script's reply, as a success's;
    ``result``: what the operation would have returned (complete, fail: the outcomes;
    complete_and_lease: the outcomes and the items leased), where it says."""

    exit_code = ExitCode.UNCONFIRMED

    def __init__(self, message: str, *, ids: list[str] | None = None,
                 reply: object = None, result: object = None) -> None:
        super().__init__(message)
        self.ids = list(ids or [])
        self.reply = reply
        self.result = result


class PartlyDone(ServerError):
    """A request cut into several script calls, sent in one pipeline, of which the server
    refused some (an error reply, as out of memory) and ran the others: each call is atomic,
    so an item is either done or left as it was. ``result``: what the operation returns
    for the items done (complete, fail, extend: their outcomes, in the order given);
    ``ids``: the items not done; ``reason``: the server's error, in one line."""

    def __init__(self, message: str, *, ids: list[str], result: object = None,
                 done: object = None, reason: str = "") -> None:
        super().__init__(message)
        self.ids = list(ids)
        self.reason = reason or message
        self.result = result
        self.done = done  # (the refs done, which ``result`` is made from)


class ParameterError(UsageError):
    """A parameter of an engine call out of its range. The engine names the parameter by its
    keyword (``older_than``) and says what is wrong (``problem``, a phrase that follows the
    name); a front end words it in its own names with :meth:`worded` (the CLI: its flags,
    ``--older-than``) where it reports the error. The engine knows no flag."""

    def __init__(self, param: str, problem: str) -> None:
        self.param, self.problem = param, problem
        super().__init__(param, problem)

    def __str__(self) -> str:
        return f"{self.param} {self.problem}"

    def worded(self, names: Mapping[str, str]) -> str:
        """The message with the parameter called by ``names[param]`` (others as they are)."""
        return f"{names.get(self.param, self.param)} {self.problem}"
