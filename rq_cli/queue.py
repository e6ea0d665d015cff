"""``from rq_cli.queue import WorkQueue``: the documented import, kept working.

The engine lives in :mod:`rq_cli.core`; this module re-exports its public queue API.
"""

from .core.queue import PURGE_STATES, STATES, WorkQueue, lease_many
from .core.util import data_id, make_session

__all__ = ["PURGE_STATES", "STATES", "WorkQueue", "data_id", "lease_many", "make_session"]
