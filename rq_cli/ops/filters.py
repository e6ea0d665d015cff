"""The filter options that ``peek``, ``requeue-dead``, ``purge`` and the console share, each
named once: the flag a person types, the engine's keyword for it (:class:`ItemFilter`'s, and
:class:`~rq_cli.errors.ParameterError`'s ``param``), and the compiled filter they make.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (rq_cli.core.filtering is loaded when a filter is used: stats stays light)
    from ..core.filtering import ItemFilter

#: The filter options: flag -> the engine's keyword (``--reason`` repeats: ``reasons``).
FILTER_FLAGS = {"--match": "match", "--error": "error", "--reason": "reasons",
                "--older-than": "older_than", "--min-attempts": "min_attempts",
                "--error-group": "error_group"}

#: The engine names a parameter out of range by its keyword (errors.ParameterError): the
#: front ends call it by its flag, where they report the error (``ParameterError.worded``).
FLAG_OF = {**{param: flag for flag, param in FILTER_FLAGS.items()},
           "limit": "--limit", "rate": "--rate", "tenant": "--tenant", "state": "--state",
           "since": "--since", "burst": "--burst", "max_in_flight": "--max-in-flight"}


def make_filter(match: str | None = None, error: str | None = None,
                reasons: list[str] | None = None, older_than: float | None = None,
                min_attempts: int | None = None,
                error_group: str | None = None) -> ItemFilter | None:
    """The compiled filter, or None when no condition is given. A bad expression, regex or
    group key fails here, before any connection is made or anything read."""
    if match is None and error is None and not reasons and older_than is None \
            and min_attempts is None and error_group is None:
        return None
    from ..core.filtering import ItemFilter

    return ItemFilter(match=match, error=error, reasons=reasons or (), older_than=older_than,
                      min_attempts=min_attempts, error_group=error_group)
