"""The shell worker behind ``rq-cli work``: lease items, run a command per item, settle.

Built on WorkQueue's public API only, around one event loop (epoll, or poll) in
the main thread. It waits, all at once, for: a command to exit (a pidfd per command, Linux
5.3+), its stderr and (with several at once) stdout to have output, its stdin to take more
of the item's data, a signal (``signal.set_wakeup_fd``), and the lease thread's answer. No
thread per command, no polling.

Commands are started with ``os.posix_spawn`` (vfork and exec: far cheaper than forking the
Python process), in their own process group, with the item's data on a stdin pipe and
``RQ_QUEUE``, ``RQ_ITEM_ID``, ``RQ_ATTEMPT``, ``RQ_LEASE_EXPIRES_AT`` and
``RQ_WORKER_SESSION`` in their environment.

Leasing. A command that exits 0 is completed in the next round trip, which also leases the
next items (``complete_and_lease``), at most ``COMPLETE_WITHIN`` seconds later. When commands
are short (they ran under ``PREFETCH_UNDER`` seconds on average), the worker holds about
``PREFETCH_SECONDS`` of work leased ahead (at least ``concurrency`` items, at most
``MAX_AHEAD``), so that a slot that frees up starts its next command at once and the round
trip runs while commands do; a refill is asked for when half of them are used, so a round
trip serves many items. Long commands get no items ahead: none waits behind them. When the
queue is empty and a slot is free, one lease thread waits on the server (``lease(wait=...)``:
BLMOVE, not a poll) while the loop goes on settling commands.

Outcomes: exit 0 completes the item; ``DEAD_EXIT`` dead-letters it at once (a permanent
failure); any other exit, a signal or ``--timeout`` fails it (retried with the queue's
backoff; dead-lettered at ``max_attempts``), with the tail of its stderr (or ``timeout``) as
the error. A lease is extended (every item held, in one call per queue) once a third of it
has passed, so short commands never cost an extension; one that ran out with nobody else
holding the item is taken back (``retake``); a lease lost (another session holds it, or the
item was cancelled) stops the command unless ``keep_running_on_lost_lease``. An exit 0 is
logged and counted once the server has answered its complete, with the server's outcome.

Outages (outage.py) end nothing: server calls are held (``_call``), commands
go on; once the server answers, leases are extended or taken back, held calls sent.

Signals: the first SIGTERM/SIGINT stops leasing and lets running commands finish (and runs
the few items already leased ahead); a second stops them (SIGTERM to their process group,
SIGKILL after the grace period) and puts their items, and those leased ahead, straight back
in line (``release``: not a failure, the attempt given back), instead of waiting for their
leases to run out. Commands run in their own process group, so a Ctrl-C on the terminal reaches
the worker, not them.

SIGKILL of the worker: a small guard process, forked at start, sees the worker's end of a
pipe close. Unless the worker said goodbye (a normal exit), it sends SIGTERM to every process
whose environment carries this worker's ``RQ_WORKER_SESSION`` (the commands and whatever
they started), and SIGKILL after the grace period to those still there. Their items come
back once the leases run out (``clean``), or at once to a restart with the same ``--name``.

This package imports neither Typer nor rich.
"""

from .loop import Worker
from .model import DEAD_EXIT, WorkerOptions, WorkerStats, resolve_command

__all__ = ["DEAD_EXIT", "Worker", "WorkerOptions", "WorkerStats", "resolve_command"]
