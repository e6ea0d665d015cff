"""The console's actions on one queue, without Textual: each said before it is done (its title
with how many items, the equivalent command line) and the same core call as the CLI's command.
A confirmed action carries what was confirmed (its count, its ids, its end state) and does no
more: items that arrive or die meanwhile are left alone.
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..connection.server_errors import translate_error
from ..core.codes import ItemState, Outcome
from ..core.contract.limits import SLOW_BATCH
from ..core.filtering import FilterReport, ItemFilter, scan
from ..core.types import ItemRef
from ..errors import ParameterError, RqError
from ..ops.filters import FLAG_OF, make_filter
from ..ops.scrub import scrub

if TYPE_CHECKING:
    from ..core.queue import WorkQueue
    from ..core.reports import PeekedItem


@dataclass
class Action:
    """What a key press will do, said before it is done: ``title`` (the question's first
    line, with how many items), ``cli`` (the same as a command line) and ``run`` (does it
    and returns what was done, in words)."""

    title: str
    cli: str
    run: Callable[[], str]
    destructive: bool = False


def command(*words: str) -> str:
    return shlex.join(["rq-cli", *words])


def _items(n: int, what: str = "item") -> str:
    return f"{n:,} {what}" + ("" if n == 1 else "s")


class Actions:
    """The console's actions on one queue; ``cli_prefix``: the global options that the
    equivalent command lines need (``--url`` masked)."""

    def __init__(self, name: str, wq: WorkQueue, cli_prefix: Sequence[str] = ()) -> None:
        self.name, self.wq, self.prefix = name, wq, list(cli_prefix)

    def _cli(self, verb: str, *words: str) -> str:
        return command(*self.prefix, verb, self.name, *words)

    def requeue_ids(self, ids: Sequence[str], same_as: Sequence[str] = ()) -> Action:
        """Requeue the dead items ``ids`` (only those); ``same_as``: the filter options they
        were marked by (``*``), the command line shown instead of every id."""
        def run() -> str:
            r = self.wq.requeue_dead(list(ids))
            return f"requeued {r.requeued}, skipped {r.skipped}, missing {r.missing}"
        return Action(f"Requeue {_items(len(ids), 'dead item')} of {self.name}: each goes "
                      "back to the queue's pending list with its attempts reset",
                      self._cli("requeue-dead", *(same_as or ids)), run)

    def delete_ids(self, ids: Sequence[str]) -> Action:
        """Delete the dead items ``ids`` (only those, each only if it is still dead). No
        command takes ids to delete, so its line is the filtered purge that finds the same
        items by their ids (a JMESPath test of the id is not one: ``--match`` reads the
        data), said as such."""
        def run() -> str:
            gone = 0
            for i in range(0, len(ids), SLOW_BATCH):
                gone += len(self.wq.purge_ids(ItemState.DEAD.value,
                                              list(ids[i:i + SLOW_BATCH])))
            return f"deleted {gone} of {len(ids)} ({len(ids) - gone} no longer dead)"
        return Action(f"Delete {_items(len(ids), 'dead item')} of {self.name}: "
                      f"{', '.join(ids[:5])}{' ...' if len(ids) > 5 else ''}; their data is "
                      "gone for good", "# no rq-cli command deletes chosen ids: rq-cli purge "
                      f"{shlex.quote(self.name)} --state dead deletes them all, or those a filter "
                      "matches", run, destructive=True)

    def requeue_matching(self, flt: ItemFilter | None, argv: Sequence[str],
                         confirmed: Mapping[str, int] | int) -> Action:
        """Every dead item that matches, or with no filter every dead item, at most as many
        as ``confirmed``: how many a dry run found (with no filter: per shard prefix,
        :meth:`Browser.confirmed`). Items that die meanwhile are left dead."""
        matched = _total(confirmed)

        def run() -> str:
            if flt is None:
                r = self.wq.requeue_dead(None, limit=confirmed)
                return f"requeued {r.requeued}, skipped {r.skipped}{_at_most(matched)}"
            return self._scan("requeue", ItemState.DEAD.value, flt, matched)
        what = "every dead item" if flt is None else "the dead items matching " + " ".join(argv)
        words = ["--all"] if flt is None else list(argv)
        return Action(f"Requeue {_items(matched, 'dead item')} of {self.name} ({what}) into "
                      "its pending list", self._cli("requeue-dead", *words), run)

    def count_matching(self, state: str, flt: ItemFilter) -> int:
        """How many items of ``state`` match (the filtered scan, reading only)."""
        return self._scanned("peek", state, flt).matched

    def _scanned(self, action: str, state: str, flt: ItemFilter,
                 limit: int | None = None) -> FilterReport:
        """The filtered scan of ``state`` run to its end, doing ``action`` to at most
        ``limit`` items: its report."""
        report = FilterReport(queue=self.name, state=state, action=action)
        for _ in scan(self.wq, state, flt, report, action=action,  # type: ignore[arg-type]
                      limit=limit):
            pass
        return report

    def _scan(self, action: str, state: str, flt: ItemFilter, confirmed: int) -> str:
        """Do ``action`` to the matching items of ``state``, at most ``confirmed``."""
        report = self._scanned(action, state, flt, confirmed)
        verb = "requeued" if action == "requeue" else "purged"
        return (f"{verb} {report.done} of {report.matched} matched ({report.scanned} scanned, "
                f"{report.changed} moved on meanwhile){_at_most(confirmed)}")

    def purge_state(self, state: str, confirmed: Mapping[str, int]) -> Action:
        """Delete the items of ``state``: at most ``confirmed`` (per shard prefix, as
        :meth:`Browser.confirmed` read them), the oldest first, each script call told how
        many it may still take: items that arrive meanwhile stay."""
        count = _total(confirmed)

        def run() -> str:
            r = self.wq.purge(state, limit=dict(confirmed))  # type: ignore[arg-type]
            return f"purged {getattr(r, state)} {state} items{_at_most(count)}"
        return Action(f"Delete all {_items(count, state + ' item')} of {self.name}: their data "
                      "is gone for good", self._cli("purge", "--state", state, "--yes"), run,
                      destructive=True)

    def requeue_group(self, key: str, matched: int) -> Action:
        """The dead items of error group ``key`` (``matched``: how many a dry run found, and
        the most it requeues)."""
        flt = make_filter(error_group=key)
        return Action(f"Requeue {_items(matched, 'dead item')} of {self.name} in error group "
                      f"{key} into its pending list", self._cli("requeue-dead", "--error-group",
                                                                key),
                      lambda: self._scan("requeue", ItemState.DEAD.value, flt,  # type: ignore[arg-type]
                                         matched))

    def purge_group(self, key: str, matched: int) -> Action:
        """Delete the dead items of error group ``key`` (at most ``matched``)."""
        flt = make_filter(error_group=key)
        state = ItemState.DEAD.value
        return Action(f"Delete {_items(matched, state + ' item')} of {self.name} in error group "
                      f"{key}: their data is gone for good",
                      self._cli("purge", "--state", state, "--error-group", key, "--yes"),
                      lambda: self._scan("purge", state, flt, matched),  # type: ignore[arg-type]
                      destructive=True)

    def purge_matching(self, state: str, flt: ItemFilter, argv: Sequence[str],
                       matched: int) -> Action:
        return Action(f"Delete {_items(matched, state + ' item')} of {self.name} matching "
                      f"{' '.join(argv)}: their data is gone for good",
                      self._cli("purge", "--state", state, *argv, "--yes"),
                      lambda: self._scan("purge", state, flt, matched), destructive=True)

    def pause(self, paused: bool) -> Action:
        """Leave the queue ``paused`` (True) or resumed (False): the end state, never a
        toggle, so a second ask from a stale view changes nothing."""
        def run() -> str:
            was = bool(self.wq.is_paused())
            if paused:
                self.wq.pause()
            else:
                self.wq.resume()
            word = "paused" if paused else "resumed"
            return word if was != paused else f"{word} already: nothing changed"
        if paused:
            return Action(f"Pause {self.name}: rq-cli workers lease nothing from it until "
                          "resumed (items already leased run on)", self._cli("pause"), run)
        return Action(f"Resume {self.name}: rq-cli workers lease from it again",
                      self._cli("resume"), run)

    def cancel(self, ids: Sequence[str]) -> Action:
        def run() -> str:
            outcomes = self.wq.cancel(list(ids), error="cancelled from rq-cli dash")
            dead = sum(1 for o in outcomes if o.outcome == Outcome.DEAD)
            return f"cancelled {dead} of {len(ids)}"
        return Action(f"Cancel {_items(len(ids))} of {self.name}: dead-lettered now (reason "
                      "cancelled); a worker running one stops at its next heartbeat",
                      self._cli("cancel", *ids), run, destructive=True)

    def extend(self, item: PeekedItem, seconds: float) -> Action:
        def run() -> str:
            [o] = self.wq.extend([ItemRef(item.id, item.lease_session)],
                                 lease_seconds=seconds)
            return f"{o.outcome}" + (f" until {_clock(o.lease_expires_at)}"
                                     if o.lease_expires_at else "")
        ref = json.dumps({"id": item.id, "session": item.lease_session or ""},
                         separators=(",", ":"))
        line = shlex.join(["echo", ref])
        return Action(f"Extend the lease of {item.id} in {self.name} to {seconds:g} s from now "
                      f"(held by {item.lease_session or 'nobody known'})",
                      f"{line} | {self._cli('extend', '-', '--lease', f'{seconds:g}')}", run)

    def clean(self) -> Action:
        def run() -> str:
            r = self.wq.clean()  # (waits out the grace period of lease-less items)
            return (f"recovered {r.recovered}, dead {r.dead}, dropped {r.dropped}, "
                    f"promoted {r.promoted}, left {r.suspects} in their grace period")
        return Action(f"Clean {self.name} now: re-queue expired leases, promote due delayed "
                      "items, dead-letter the spent", self._cli("clean"), run)


def _total(confirmed: Mapping[str, int] | int) -> int:
    return confirmed if isinstance(confirmed, int) else sum(confirmed.values())


def _at_most(confirmed: int) -> str:
    return f" (at most the {confirmed:,} confirmed)"


def _clock(at: float | None) -> str:
    return "-" if at is None else time.strftime("%H:%M:%S", time.localtime(at))


def run_action(action: Action, url: str = "") -> str:
    """Do ``action``; what was done in words, or ``failed: <reason>``."""
    try:
        return action.run()
    except Exception as exc:  # a server gone, a refused id: said, not fatal
        return "failed: " + failure(exc, url)


def failure(exc: BaseException, url: str) -> str:
    """The one-line reason an action or a read failed, passwords and URLs masked (an engine
    parameter called by its filter flag, as the console's filters are typed)."""
    err: BaseException | None = exc if isinstance(exc, RqError) else translate_error(exc, url)
    if err is None:
        return " ".join(scrub(f"internal error: {type(exc).__name__}: {exc}", None).split())
    text = err.worded(FLAG_OF) if isinstance(err, ParameterError) else str(err)
    return " ".join(scrub(text, None).split())
