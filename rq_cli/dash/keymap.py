"""Every key of ``rq-cli dash``, once: each screen's bindings and the help (``?``) are built
from this registry, so the help lists exactly the keys that work (tests/dash/test_dash_keys.py).

A :class:`Key` is a binding with the words the help says about it; ``acts``: it changes the
queue (off read-only: the help leaves it out, the screen refuses it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from textual.binding import Binding

from ..console.model import TABS


@dataclass(frozen=True)
class Key:
    """One binding: Textual's key names (comma-separated), the action, what the help says,
    and the footer's label (empty: not in the footer)."""

    keys: str
    action: str
    help: str
    label: str = ""
    acts: bool = False
    priority: bool = False

    def binding(self) -> Binding:
        return Binding(self.keys, self.action, self.label or self.help, show=bool(self.label),
                       priority=self.priority, tooltip=self.help)

    @property
    def name(self) -> str:
        """The action's name, without its arguments (``tab('dead')``: ``tab``)."""
        return self.action.split("(", 1)[0].removeprefix("app.")

    @property
    def shown(self) -> str:
        """The keys as the help shows them: ``slash,F`` is ``/ F``."""
        return " ".join(_GLYPHS.get(k, k) for k in self.keys.split(","))


_GLYPHS = {"slash": "/", "question_mark": "?", "colon": ":", "asterisk": "*",
           "left_square_bracket": "[", "right_square_bracket": "]", "escape": "Esc",
           "enter": "Enter", "space": "Space", "tab": "Tab", "shift+tab": "Shift+Tab",
           "ctrl+c": "Ctrl+C"}

#: The app's keys, everywhere.
APP = (
    Key("q", "quit_or_back", "back (quits on the overview)", "Quit/back"),
    Key("ctrl+c", "quit", "quit", priority=True),
    Key("question_mark", "help", "this help", "Help"),
    Key("colon", "command", "the command bar (:open QUEUE, :sort KEY, :q ...)"),
)
#: ``q`` and ``?`` again, first in each screen's bindings: the footer lists a screen's keys
#: before the app's, so these stay on screen however narrow the terminal.
FOOTER_FIRST = tuple(Key(k.keys, "app." + k.action, k.help, k.label)
                     for k in APP if k.label)
#: The overview's keys.
OVERVIEW = (
    *FOOTER_FIRST,
    Key("enter", "open", "open the queue", "Open"),
    Key("s", "sort", "sort by the next key (:sort KEY picks one)", "Sort"),
    Key("slash", "search", "find queues by name", "Find"),
    Key("p,P", "pause", "pause a running queue / resume a paused one", "Pause/resume",
        acts=True),
    Key("c", "clean", "clean now", "Clean", acts=True),
    Key("r", "refresh", "refresh"),
)
_TAB_HELP = {"holders": "who holds the leases (D / S ask a worker)",
             "dedup": "the de-dup window",
             "errors": "dead and retrying items grouped by error (Enter: the group's dead "
                       "items)"}
#: A queue's keys.
QUEUE = (
    *FOOTER_FIRST,
    *(Key(str(i + 1), f"tab('{tab}')", f"the {tab} tab" + (f": {_TAB_HELP[tab]}"
                                                           if tab in _TAB_HELP else ""))
      for i, tab in enumerate(TABS)),
    Key("right_square_bracket,tab", "step_tab(1)", "next tab"),
    Key("left_square_bracket,shift+tab", "step_tab(-1)", "previous tab"),
    Key("n", "page(1)", "next page", "Next page"),
    Key("b", "page(-1)", "previous page", "Prev page"),
    Key("g", "first", "first page"), Key("G", "last", "last page"),
    Key("slash,F", "filter", "filter: the CLI's --match EXPR --error REGEX --reason R "
        "--older-than S --min-attempts N, or a bare JMESPath expression (empty: none)",
        "Filter"),
    Key("t", "tenant", "next tenant (the pending tab of a fair queue)"),
    Key("space", "select", "mark the row"),
    Key("v", "mark_range", "mark a range (from the last mark to the cursor)"),
    Key("asterisk", "mark_matching", "mark every item matching the filter (up to 10,000)"),
    Key("u", "unmark", "unmark all"),
    Key("r", "refresh", "refresh"),
    Key("R", "requeue", "requeue the marked dead items (else the one under the cursor); "
        "on the errors tab the dead group under the cursor", "Requeue", acts=True),
    Key("A", "requeue_all", "requeue every dead item matching the filter (every dead item "
        "without one)", "Requeue all", acts=True),
    Key("X", "purge", "purge every item of the tab matching the filter (all without one); "
        "on the errors tab the dead group under the cursor", "Purge", acts=True),
    Key("x", "cancel", "cancel the marked items (else the one under the cursor)", "Cancel",
        acts=True),
    Key("e", "extend", "extend the lease under the cursor", acts=True),
    Key("p,P", "pause", "pause a running queue / resume a paused one", acts=True),
    Key("C", "clean", "clean now", acts=True),
    Key("D", "ask_worker('drain')", "ask the worker of a holders row to drain (finish its "
        "items, exit); it logs who asked", "Drain", acts=True),
    Key("S", "ask_worker('stop')", "ask the worker of a holders row to stop (stop its "
        "commands, put their items back)", "Stop", acts=True),
    Key("a", "audit", "the queue's audit trail (its repairs, from the CLI and the consoles)"),
    Key("B", "batches", "the queue's batches, newest first, with their counts and progress"),
)
#: The batches screen's keys.
BATCHES = (Key("r", "refresh", "refresh", "Refresh"),)
#: The audit trail's keys.
AUDIT = (Key("r", "refresh", "read the trail again", "Refresh"),)
#: An item's keys.
ITEM = (
    Key("r", "refresh", "refresh", "Refresh"),
    Key("R", "requeue", "requeue it (a dead item)", "Requeue", acts=True),
    Key("x", "cancel", "cancel it (a live item)", "Cancel", acts=True),
    Key("e", "extend", "extend its lease (a processing item)", "Extend", acts=True),
)
#: A question's keys (an action asked before it is done: none read-only).
QUESTION = (Key("y", "answer(True)", "do it", "Yes", acts=True),
            Key("n,escape", "answer(False)", "leave it", "No", acts=True))
#: The command bar's and the help's own keys.
BAR = (Key("escape", "close", "close the bar"),)
HELP = (Key("escape,q,question_mark", "close", "close the help", "Close"),)

#: The help's sections, in order: each screen's keys (the repeated footer keys aside).
SECTIONS: tuple[tuple[str, Sequence[Key]], ...] = (
    ("Everywhere", APP), ("Overview", OVERVIEW), ("A queue", QUEUE), ("An item", ITEM),
    ("Batches", BATCHES), ("Audit trail", AUDIT), ("A question", QUESTION),
    ("Command bar", BAR), ("This help", HELP))
#: Lines after the keys (not bindings): the commands and what every action does first.
NOTES = (
    ("Commands", ":open QUEUE · :sort KEY · :filter ... · :pending (any tab) · :q", False),
    ("", ":requeue [FILTER] · :purge · :pause · :resume · :clean · :extend SECONDS", True),
    ("", "Each action asks first: what it will do, to how many items, and the same command "
         "line, and does at most that (items that arrive meanwhile stay); what it did is "
         "shown with that line, so it can be scripted. Marks are cleared once an action is "
         "confirmed. The mouse clicks rows and tabs.", True),
)


def bindings(keys: Iterable[Key]) -> list[Binding]:
    """A screen's ``BINDINGS``."""
    return [k.binding() for k in keys]


def acting(keys: Iterable[Key]) -> frozenset[str]:
    """The names of the actions among ``keys`` that change the queue (off read-only)."""
    return frozenset(k.name for k in keys if k.acts)


def help_rows(read_only: bool) -> list[tuple[str, str, str]]:
    """(section, keys, what) for each key, in the order of :data:`SECTIONS`: a screen's
    repeated footer keys once (under "Everywhere"), actions only where they are on."""
    rows: list[tuple[str, str, str]] = []
    for section, keys in SECTIONS:
        first = True
        for key in keys:
            if key in FOOTER_FIRST or (key.acts and read_only):
                continue
            rows.append((section if first else "", key.shown, key.help))
            first = False
    return rows
