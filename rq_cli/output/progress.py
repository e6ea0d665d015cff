"""Progress on stderr for long work: a rich bar on a terminal, nothing otherwise."""

from __future__ import annotations

import math
import time
from typing import Any


class Progress:
    """What a command sees of a progress bar; a no-op when none is drawn."""

    done = 0  # units done so far (what :meth:`advance` added up)

    def advance(self, n: int) -> None:
        """``n`` more units done (the core's ``progress`` callback)."""
        self.done += n

    def set(self, completed: int | None, description: str | None = None) -> None:
        """Absolute position (for example bytes read of stdin), and a new label."""

    def wait(self, seconds: float, what: str) -> None:
        """Sleep ``seconds``, saying meanwhile ``what`` it waits for and how long is left."""
        time.sleep(seconds)


class NoProgress(Progress):
    pass


def progress_bar(console: Any, bounded: bool) -> Any:
    """The rich Progress of :meth:`Output.progress`: spinner, label, bar, counts, times."""
    from rich.progress import (
        BarColumn,
        SpinnerColumn,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.progress import Progress as RichProgress

    columns: list[Any] = [SpinnerColumn(), TextColumn("{task.description}")]
    if bounded:
        columns += [BarColumn(), TaskProgressColumn()]
    columns += [TextColumn("{task.fields[count]}"), TimeElapsedColumn()]
    if bounded:
        columns += [TextColumn("left"), TimeRemainingColumn()]
    return RichProgress(*columns, console=console, transient=True)


class BarProgress(Progress):
    def __init__(self, bar: Any, task: Any, label: str, total: int | None,
                 unit: str) -> None:
        self.bar, self.task, self.label, self.total, self.unit = bar, task, label, total, unit

    def _count(self, done: int) -> str:
        if not self.unit:
            return ""
        if self.total is None:
            return f"{done:,} {self.unit}"
        return f"{done:,}/{self.total:,} {self.unit}"

    def advance(self, n: int) -> None:
        self.done += n
        self.bar.update(self.task, advance=n, count=self._count(self.done))

    def set(self, completed: int | None, description: str | None = None) -> None:
        changes: dict[str, Any] = {}
        if completed is not None:
            changes["completed"] = completed
            changes["count"] = self._count(completed)
        if description is not None:
            changes["description"] = self.label = description
        self.bar.update(self.task, **changes)

    def wait(self, seconds: float, what: str) -> None:
        label = self.label
        end = time.monotonic() + seconds
        try:
            while (left := end - time.monotonic()) > 0:
                self.bar.update(self.task,
                                description=f"{label}: {what}: {math.ceil(left)}s left")
                time.sleep(min(left, 0.2))
        finally:
            self.bar.update(self.task, description=label)
