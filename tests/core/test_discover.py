"""Queue discovery (rq_cli/core/fleet/discover.py) knows the type of every marker key of keys.py.

(Was an ``assert`` run at import time; a test says the same without costing start-up.)
"""

from rq_cli.core.contract.keys import DISCOVERY_SUFFIXES
from rq_cli.core.fleet import discover


def test_every_discovery_suffix_is_scanned_by_its_key_type():
    by_type = discover._BY_TYPE
    scanned = [suffix for _, suffixes in by_type for suffix in suffixes]
    assert sorted(scanned) == sorted(DISCOVERY_SUFFIXES)  # each once, none missing
    assert len({key_type for key_type, _ in by_type}) == len(by_type)
