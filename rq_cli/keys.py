"""The key schema (DESIGN.md section 2): the only place that builds key names.

A queue is a key prefix ``P``. The peer-compatible keys (``P:item:<id>``, ``P:queue``,
``P:processing``, ``P:lease:<id>``, ``P:leased_by_session:<id>``, ``P:cleaning``) are a
contract with the redis-work-queue clients and must never change. Lua scripts derive the
per-item keys from the prefix with the same suffixes (``lua/_common.lua``); a test checks
that both agree.
"""

from __future__ import annotations

from typing import NamedTuple

LAYOUTS = ("compat", "v0.3", "v0.1")

# Characters with a meaning in a SCAN/KEYS glob pattern.
_GLOB_SPECIAL = frozenset("*?[]\\")


def glob_escape(text: str) -> str:
    """Escape ``text`` so a SCAN MATCH pattern matches it literally."""
    return "".join("\\" + c if c in _GLOB_SPECIAL else c for c in text)


def has_hash_tag(prefix: str) -> bool:
    """True if ``prefix`` contains a Redis Cluster hash tag (``{...}`` with something inside)."""
    start = prefix.find("{")
    if start < 0:
        return False
    end = prefix.find("}", start + 1)
    return end > start + 1


class Keys(NamedTuple):
    """Every key name of the queue with prefix ``prefix``.

    (A NamedTuple rather than a frozen dataclass: it is created ten times faster, and
    start-up is a budget.)
    """

    prefix: str

    # -- peer-compatible -------------------------------------------------------------
    @property
    def queue(self) -> str:
        return f"{self.prefix}:queue"

    @property
    def processing(self) -> str:
        return f"{self.prefix}:processing"

    @property
    def cleaning(self) -> str:
        return f"{self.prefix}:cleaning"

    def item(self, item_id: str) -> str:
        return f"{self.prefix}:item:{item_id}"

    def lease(self, item_id: str) -> str:
        """v0.3 lease key."""
        return f"{self.prefix}:lease:{item_id}"

    def leased_by_session(self, item_id: str) -> str:
        """v0.1 lease key."""
        return f"{self.prefix}:leased_by_session:{item_id}"

    # -- rq-cli's own ----------------------------------------------------------------
    @property
    def delayed(self) -> str:
        return f"{self.prefix}:delayed"

    @property
    def expires(self) -> str:
        return f"{self.prefix}:expires"

    @property
    def attempts(self) -> str:
        return f"{self.prefix}:attempts"

    @property
    def enqueued(self) -> str:
        return f"{self.prefix}:enqueued"

    @property
    def errors(self) -> str:
        return f"{self.prefix}:errors"

    @property
    def dead(self) -> str:
        return f"{self.prefix}:dead"

    def dead_item(self, item_id: str) -> str:
        return f"{self.prefix}:dead_item:{item_id}"

    @property
    def dead_info(self) -> str:
        return f"{self.prefix}:dead_info"

    @property
    def counters(self) -> str:
        return f"{self.prefix}:counters"

    @property
    def paused(self) -> str:
        return f"{self.prefix}:paused"

    @property
    def suspects(self) -> str:
        return f"{self.prefix}:suspects"

    @property
    def leases(self) -> str:
        """zset id -> lease deadline (ms) of leases granted or seen by rq-cli (for stats)."""
        return f"{self.prefix}:leases"

    # -- patterns and groups ---------------------------------------------------------
    @property
    def item_pattern(self) -> str:
        """SCAN pattern matching every item data key of this queue, and nothing else's."""
        return glob_escape(self.prefix) + ":item:*"

    @property
    def item_key_offset(self) -> int:
        """Length of ``P:item:``: ``key[offset:]`` is the id."""
        return len(self.prefix) + len(":item:")

    @property
    def script_keys(self) -> list[str]:
        """The KEYS every script receives: ``P:queue`` alone, for routing on a cluster;
        ``lua/_common.lua`` derives the others from the prefix, in the same hash slot."""
        return [self.queue]

    @property
    def marker_keys(self) -> list[str]:
        """Keys whose existence shows that a queue lives at this prefix (for discovery)."""
        return [self.queue, self.processing, self.delayed, self.dead, self.counters]


# Suffixes by which ``queues --discover`` recognises a prefix from a key name.
DISCOVERY_SUFFIXES = (":queue", ":processing", ":delayed", ":dead", ":counters")
