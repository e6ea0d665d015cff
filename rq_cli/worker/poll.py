"""The worker's event loop helper: :class:`Poller` waits for many fds at once (epoll, or poll).
"""

from __future__ import annotations

import math
import os
import select
from typing import Any


class Poller:
    """Wait for fds to be readable (or writable): epoll where there is one, else poll. Each
    fd carries the ``(kind, what)`` pair that ``wait`` hands back for it."""

    def __init__(self) -> None:
        self._epoll = select.epoll() if hasattr(select, "epoll") else None
        self._poll = select.poll() if self._epoll is None else None
        self._data: dict[int, tuple[str, Any]] = {}

    def register(self, fd: int, write: bool, data: tuple[str, Any]) -> None:
        mask = select.POLLOUT if write else select.POLLIN
        if self._epoll is not None:
            self._epoll.register(fd, mask)
        else:
            assert self._poll is not None
            self._poll.register(fd, mask)
        self._data[fd] = data

    def has(self, fd: int) -> bool:
        return fd in self._data

    def unregister(self, fd: int) -> None:
        if self._data.pop(fd, None) is None:
            return
        if self._epoll is not None:
            self._epoll.unregister(fd)
        else:
            assert self._poll is not None
            self._poll.unregister(fd)

    def wait(self, timeout: float) -> list[tuple[str, Any]]:
        """The data of the fds ready within ``timeout`` seconds (hang-ups and errors count as
        ready: the read or write that follows tells)."""
        if self._epoll is not None:
            ready = self._epoll.poll(timeout)
        else:
            assert self._poll is not None
            ready = self._poll.poll(math.ceil(timeout * 1000))
        data = self._data
        return [data[fd] for fd, _ in ready if fd in data]

    def close(self) -> None:
        if self._epoll is not None:
            self._epoll.close()


def drain(fd: int) -> None:
    try:
        while os.read(fd, 512):
            pass
    except BlockingIOError:
        pass
