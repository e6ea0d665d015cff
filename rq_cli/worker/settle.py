"""How the worker records an item's outcome: complete, fail, dead-letter, release."""

from __future__ import annotations

import time
from typing import Any

from ..core.codes import Outcome
from ..core.contract.limits import RESULT_MAX
from ..core.types import ItemOutcome
from ..errors import Unconfirmed
from .env import unrunnable
from .model import (
    DEAD_EXIT,
    Held,
    Job,
)
from .outage import transient
from .state import WorkerBase


class Settling(WorkerBase):
    """The worker, able to record outcomes."""

    def _complete(self, finished: list[Held] | None = None) -> None:
        """Complete the items that exited 0 (held while the server is out of reach)."""
        if finished is None:
            finished, self.finished = self.finished, []
        for wq in {id(h.wq): h.wq for h in finished}.values():  # (a shard, for a sharded queue)
            mine = [h for h in finished if h.wq is wq]
            if not mine:
                continue
            if not self.outage.down:
                try:
                    outcomes = wq.complete([h.ref for h in mine])
                    self._note_completions(mine, [o.outcome for o in outcomes])
                    continue
                except Unconfirmed as exc:  # made, not confirmed: noted, not done again
                    self._note_completions(mine, [o.outcome for o in exc.result],  # type: ignore[attr-defined]
                                           unconfirmed=exc)
                    continue
                except Exception as err:
                    if not transient(err):
                        raise
                    self.outage.failed(err)
            self._hold_finished(mine)

    def _hold_finished(self, finished: list[Held]) -> None:
        if finished and not self.finished:
            self.finished_at = time.monotonic()
        self.finished.extend(finished)

    def _note_completions(self, finished: list[Held], outcomes: list[str],
                          unconfirmed: Unconfirmed | None = None) -> None:
        """Log (and count) each item with the outcome the server gave its complete
        (``unconfirmed``: durability, the complete was made but not confirmed in time)."""
        for held, outcome in zip(finished, outcomes, strict=True):
            entry = held.entry or {"queue": held.queue, "id": held.item.id}
            entry["outcome"] = outcome
            if outcome == Outcome.COMPLETED:
                self.stats.completed += 1
                if unconfirmed is not None:
                    entry["note"] = _unconfirmed_note(unconfirmed)
            else:
                self.stats.lost += 1
                entry["note"] = "not completed: the lease was lost (another session holds " \
                                "the item, or it is gone)"
            self.log(entry)

    def _release(self, held: Held, entry: dict[str, Any]) -> None:
        """Give ``held`` back (the second signal): not a failure, its attempt given back."""
        try:
            (out,) = held.wq.release([held.item.id])
        except Unconfirmed as exc:  # (given back on this server; not confirmed)
            entry["note"] = _unconfirmed_note(exc)
            out = ItemOutcome(held.item.id, Outcome.RETURNED)
        entry["outcome"] = out.outcome
        if out.outcome == Outcome.RETURNED:
            self.stats.returned += 1
        else:
            self.stats.lost += 1
        self.log(entry)

    def _fail(self, held: Held, entry: dict[str, Any], error: str, dead: bool,
              timeout: bool = False) -> None:
        try:
            # (an item that can never run is dead-lettered: the leased item itself is
            # failed, by the id the server gave, which no command line could carry)
            never = unrunnable(held.item) is not None
            (out,) = held.wq.fail([held.item if never else held.ref], error=error,
                                  dead=dead or never)
        except Unconfirmed as exc:  # made, not confirmed: noted, not done again
            entry["note"] = _unconfirmed_note(exc)
            (out,) = exc.result if isinstance(exc.result, list) else \
                [ItemOutcome(held.item.id, Outcome.DEAD)]
        if out.outcome in (Outcome.DEAD, Outcome.RETRIED):
            self.stats.dead += out.outcome == Outcome.DEAD
            self.stats.failed += out.outcome == Outcome.RETRIED
            entry["outcome"] = "timeout" if timeout else out.outcome
        else:
            self.stats.lost += 1
            entry["outcome"] = out.outcome
        self.log(entry)

    def _return_ahead(self) -> None:
        """Put the items leased ahead straight back in line (the second signal)."""
        while self.ahead:
            held = self.ahead.popleft()
            entry = {"queue": held.queue, "id": held.item.id,
                     "attempt": held.item.attempt, "exit_code": None, "duration_s": 0.0}
            self._call(lambda h=held, e=entry: self._release(h, e))  # type: ignore[misc]

    def _settle(self, job: Job) -> None:
        """Note ``job``'s outcome: completed (in the next round trip), failed, dead..."""
        code = job.status
        held = job.held
        item = held.item
        duration = job.ended - job.started
        self.avg_duration = duration if self.avg_duration is None else \
            0.8 * self.avg_duration + 0.2 * duration
        entry: dict[str, Any] = {"queue": held.queue, "id": item.id, "attempt": item.attempt,
                                 "exit_code": code, "duration_s": round(duration, 3)}
        if held.lost is not None:
            entry["outcome"] = held.lost  # someone else owns the item now: touch nothing
            self.stats.lost += 1
            self.log(entry)
        elif job.stopped == "shutdown":
            self._call(lambda: self._release(held, entry))
        elif code == 0 and job.stopped is None:
            if job.result is not None:  # work --result stdout: kept for a batch item
                held.result = bytes(job.result[:RESULT_MAX])
                if len(job.result) > RESULT_MAX:
                    entry["result_cut"] = RESULT_MAX
            held.entry = entry  # logged with the server's answer (_note_completions)
            self._hold_finished([held])
        else:
            error = self._error(job, code)
            dead = code == DEAD_EXIT and job.stopped is None
            timeout = job.stopped == "timeout"
            self._call(lambda: self._fail(held, entry, error, dead, timeout))

    @staticmethod
    def _error(job: Job, code: int | None) -> str:
        if job.stopped == "timeout":
            return "timeout"
        tail = bytes(job.stderr_tail).decode("utf-8", "replace").strip()
        what = f"exit code {code}" if code is not None and code >= 0 else \
            f"killed by signal {-(code or 0)}"
        return f"{what}: {tail}" if tail else what

    def _cannot_start(self, held: Held, error: str, dead: bool = False) -> None:
        """The command could not be started: fail the item, so it is retried with the
        queue's backoff (it vanished, out of processes...), or dead-letter it at once when
        it can never run (``dead``: an id that cannot be passed in the environment)."""
        entry = {"queue": held.queue, "id": held.item.id, "attempt": held.item.attempt,
                 "exit_code": None, "duration_s": 0.0, "error": error}
        self._call(lambda: self._fail(held, entry, f"cannot start the command: {error}",
                                      dead))


def _unconfirmed_note(exc: Unconfirmed) -> str:
    """The log note of an outcome made but not confirmed by the replicas in time."""
    return f"not confirmed in time, so the item may run again: {exc}"
