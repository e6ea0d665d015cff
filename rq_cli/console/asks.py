"""Asking the worker of a holders row to drain or stop (``D`` and ``S`` in ``rq-cli dash``, a
confirmed action in ``rq-cli web``): the action, said before it is done, over
:func:`rq_cli.core.operations.control.ask_worker`, and who asks (:func:`console_user`)."""

from __future__ import annotations

import getpass
import os
import shlex
from typing import TYPE_CHECKING, Any

from ..core.codes import Ask
from ..core.contract.limits import CONTROL_EVERY
from ..core.operations.control import ask_worker
from .actions import Action

if TYPE_CHECKING:
    from ..core.reports import Holder

#: The tab whose rows are worker sessions.
HOLDERS_TAB = "holders"


def console_user() -> str:
    """Who asks, from this console: ``user@host``."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid()) if hasattr(os, "getuid") else "?"
    return f"{user}@{os.uname().nodename}"


def ask_action(name: str, queue: Any, holder: Holder, ask: Ask, by: str) -> Action:
    """Ask ``holder``'s worker session (a holders row of queue ``name``) to drain or stop,
    as ``by``. Its command line: the signals that do the same on the worker's host."""
    session = str(holder.session)
    where = f"{holder.host or '?'}, pid {holder.pid or '?'}"
    held = f"{holder.live:,} live lease" + ("" if holder.live == 1 else "s")
    if ask == Ask.DRAIN:
        does = "finish the items it holds, take no new ones and exit"
        kill = f"kill -TERM {holder.pid or 'PID'}"
    else:
        does = "stop its commands, put their items back in line at once and exit"
        kill = f"kill -TERM {holder.pid or 'PID'}; sleep 1; kill -TERM {holder.pid or 'PID'}"
    cli = f"{kill}  # on {shlex.quote(holder.host or 'its host')}, or by its control key"

    def run() -> str:
        ask_worker(queue, session, ask, by)
        return (f"asked worker {session} to {ask.value} as {by} (it reads the ask every "
                f"{CONTROL_EVERY:g} s or so while it runs)")
    return Action(f"Ask worker {session} ({where}; {held} of {name}) to {ask.value}: {does}",
                  cli, run, destructive=ask == Ask.STOP)
