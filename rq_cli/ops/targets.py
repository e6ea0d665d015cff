"""A queue to read, as ``stats`` (and its --watch, --check and --prometheus views) and the
console read it."""

from typing import NamedTuple

from ..core.queue import WorkQueue


class Target(NamedTuple):
    """A queue to read: its name (as given, configured or discovered), the queue, its server."""

    name: str
    queue: WorkQueue
    url: str
