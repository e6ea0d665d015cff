"""``from rq_cli.types import ItemRef``: the documented import, kept working.

The result types live in :mod:`rq_cli.core.types`; the report dataclasses (Stats, PeekedItem,
...) load on first use, as there.
"""

from typing import Any

from .core import types as _types

__all__ = _types.__all__


def __getattr__(name: str) -> Any:
    return getattr(_types, name)
