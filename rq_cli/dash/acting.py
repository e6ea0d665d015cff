"""The actions of a queue's tabs in ``rq-cli dash`` (R, A, X, x, e, p, C): a mixin of
:class:`~rq_cli.dash.queue_screen.QueueScreen`, which gives ``tab``, ``current()``,
``chosen()``, ``target``, ``browser``, ``actions``, the view's filter and its marks. Each action
is counted or read first and asked with its count (:mod:`rq_cli.console.actions`): it does at
most what its question said."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual import work

from ..console.actions import Action, failure
from ..console.model import ERRORS_TAB, TABS
from ..core.codes import ItemState
from ..ops.filters import make_filter

if TYPE_CHECKING:
    from ..core.filtering import ItemFilter


class Acting:
    """The screen's actions on its queue, each asked before it is done."""

    def ask(self: Any, action: Action | None) -> None:
        """Confirm ``action``; once confirmed, the marks are cleared (they named rows of
        the view the action changed)."""
        if action is not None:
            self.app.ask(action, then=self.action_unmark, queue=self.target.queue)

    def on_dead_tab(self: Any) -> bool:
        """True on the dead tab; else says that requeue moves dead items."""
        if self.tab != ItemState.DEAD:
            self.app.notify("requeue moves dead items: open the dead tab (4)",
                            severity="warning")
        return bool(self.tab == ItemState.DEAD)

    def group_action(self: Any, make: Callable[[str, int], Action]) -> None:
        """Requeue or purge the dead error group under the cursor, counted first."""
        row = self.current()
        if row is None or row.state != ItemState.DEAD:
            self.app.notify("requeue and purge act on a dead group (retrying items are live)",
                            severity="warning")
            return
        key = row.key
        self.counted(ItemState.DEAD.value, lambda n: make(key, n),
                     make_filter(error_group=key))

    def action_requeue(self: Any) -> None:
        if self.tab == ERRORS_TAB:
            self.group_action(self.actions.requeue_group)
            return
        ids = self.chosen() if self.on_dead_tab() else []
        if ids:
            self.ask(self.actions.requeue_ids(ids, self.marked_by if self.selected else ()))

    def action_requeue_all(self: Any) -> None:
        if not self.on_dead_tab():
            return
        flt, argv = self.flt, self.flt_argv
        if flt is None:  # every dead item: at most the count per shard read now
            self.confirmed(ItemState.DEAD.value,
                           lambda caps: self.actions.requeue_matching(None, argv, caps))
        else:
            self.counted(ItemState.DEAD.value,
                         lambda n: self.actions.requeue_matching(flt, argv, n))

    def action_purge(self: Any) -> None:
        if self.tab == ERRORS_TAB:
            self.group_action(self.actions.purge_group)
            return
        if self.tab not in TABS[:4]:
            return
        tab, flt, argv = self.tab, self.flt, self.flt_argv
        if flt is None:
            self.confirmed(tab, lambda caps: self.actions.purge_state(tab, caps))
        else:
            self.counted(tab, lambda n: self.actions.purge_matching(tab, flt, argv, n))

    @work(thread=True, group="count")
    def counted(self: Any, state: str, make: Callable[[int], Action],
                flt: ItemFilter | None = None) -> None:
        """Count the items an action will touch (a dry run: ``flt``, else the view's
        filter), then ask."""
        flt = flt or self.flt
        try:
            n = (self.browser.counts()[state] if flt is None else
                 self.actions.count_matching(state, flt))
        except Exception as exc:
            self.app.call_from_thread(self.app.notify, failure(exc, self.target.url),
                                      severity="error")
            return
        if n == 0:
            self.app.call_from_thread(self.app.notify, "nothing matches: nothing to do")
            return
        self.app.call_from_thread(self.ask, make(n))

    @work(thread=True, group="count")
    def confirmed(self: Any, state: str, make: Callable[[dict[str, int]], Action]) -> None:
        """Read how many items ``state`` holds (per shard), then ask: the action does at
        most what its question says (:meth:`Browser.confirmed`)."""
        try:
            caps = self.browser.confirmed(state)
        except Exception as exc:
            self.app.call_from_thread(self.app.notify, failure(exc, self.target.url),
                                      severity="error")
            return
        if not sum(caps.values()):
            self.app.call_from_thread(self.app.notify, f"no {state} items: nothing to do")
            return
        self.app.call_from_thread(self.ask, make(caps))

    def action_cancel(self: Any) -> None:
        if self.tab not in TABS[:4] or self.tab == ItemState.DEAD:
            self.app.notify("cancel dead-letters live items: pending, processing or delayed",
                            severity="warning")
            return
        ids = self.chosen()
        if ids:
            self.ask(self.actions.cancel(ids))

    def action_extend(self: Any, seconds: float | None = None) -> None:
        row = self.current()
        if self.tab != ItemState.PROCESSING or row is None:
            self.app.notify("extend a lease: a row of the processing tab", severity="warning")
            return
        lease = seconds or float(self.target.queue.options.lease_seconds)
        self.ask(self.actions.extend(row, lease))

    def action_pause(self: Any) -> None:
        self.ask(self.actions.pause(not self.counts.get("paused")))  # (its end state)

    def action_batches(self: Any) -> None:
        from .batches import BatchesScreen  # (the console model's rows: Browser.batches)

        self.app.push_screen(BatchesScreen(self.target))

    def action_audit(self: Any) -> None:
        from .audit import AuditScreen  # (the queue's audit trail: rq_cli/core/operations/audit.py)

        self.app.push_screen(AuditScreen(self.target))

    def action_clean(self: Any) -> None:
        self.ask(self.actions.clean())
