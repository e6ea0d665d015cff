"""The key schema (docs/DESIGN.md section 2): the only place that defines key names.

A queue is a key prefix ``P``. The peer-compatible keys (``P:item:<id>``, ``P:queue``,
``P:processing``, ``P:lease:<id>``, ``P:leased_by_session:<id>``, ``P:cleaning``) are a
contract with the redis-work-queue clients and must never change.

``FIXED_KEYS`` is the one definition of a queue's fixed keys (``P:<name>``): their Redis
types and roles. From it come the ``Keys`` properties' names (a test ties the two), the scripts'
``K_<NAME>`` variables, their type checks and bookkeeping lists (``scripts.source``),
the hashes and sets that deep clean sweeps (``META_HASHES``, ``META_ZSETS``) and the keys that
``purge --state all`` unlinks whole. **Adding a key**: one ``FixedKey`` line here and its
``Keys`` property; a per-item bookkeeping key (role ``meta``) is then dropped with its item by
every script, swept by deep clean and purged, with no other edit.
"""

from __future__ import annotations

import hashlib
from typing import NamedTuple

from ..codes import COUNTERS, Counter, ItemState

#: The generation whose keys a queue of each single-generation layout should never show.
OTHER_GENERATION = {"v0.3": "v0.1", "v0.1": "v0.3"}

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


class FixedKey(NamedTuple):
    """One fixed key of a queue, ``P:<name>``."""

    name: str  #: the suffix, the ``Keys`` property, and ``K_<NAME>`` in Lua
    type: str  #: its Redis type (the scripts refuse to write next to a key of another type)
    #: "line": holds ids in a state (queue, processing, delayed, dead): purged item by item;
    #: "meta": per-item bookkeeping, id -> value: dropped with its item, swept by deep clean;
    #: "other": everything else (unlinked whole by ``purge --state all``)
    role: str
    #: absent from a busy queue most of the time (nothing delayed, dead, expiring, failed,
    #: paused or suspected): one EXISTS over these spares their type checks (scripts.py)
    rare: bool = False


FIXED_KEYS: tuple[FixedKey, ...] = (
    # peer-compatible
    FixedKey("queue", "list", "line"),
    FixedKey("processing", "list", "line"),
    FixedKey("cleaning", "list", "other", rare=True),
    # rq-cli's own
    FixedKey("delayed", "zset", "line", rare=True),
    FixedKey("dead", "zset", "line", rare=True),
    FixedKey("expires", "zset", "meta", rare=True),
    FixedKey("leases", "zset", "meta"),
    FixedKey("attempts", "hash", "meta"),
    FixedKey("enqueued", "hash", "meta"),
    FixedKey("errors", "hash", "meta", rare=True),
    FixedKey("holders", "hash", "meta"),
    FixedKey("dead_info", "hash", "other", rare=True),
    FixedKey("counters", "hash", "other"),
    FixedKey("paused", "string", "other", rare=True),
    # clean's sightings, id -> first seen; fields are "p:<id>", "c:<id>" or "d:<id>"
    FixedKey("suspects", "hash", "other", rare=True),
    # fair queues (the manual's "Fair queues"): the ring of tenants with work (a LIST rotated with
    # LMOVE, its right end the tenant whose turn it is; "" stands for the default tenant,
    # P:queue), the ring's state (fields "turn": items the head tenant has had this turn,
    # "pending": items in the tenants' sub-queues), the weights, and each tenanted item's
    # tenant (id -> tenant, dropped with its item)
    FixedKey("tenants", "list", "other", rare=True),
    FixedKey("fair", "hash", "other", rare=True),
    FixedKey("tenant_weights", "hash", "other", rare=True),
    FixedKey("item_tenant", "hash", "meta", rare=True),
    # fair queues: wake-up tokens for `lease --wait` (a push into a tenant's sub-queue does
    # not touch P:queue, which a waiter would block on): a token per item put in line and
    # one per call that delays items (a waiter learns when they fall due), at most
    # WAKE_TOKENS, expiring WAKE_TTL_MS after the last; waiters block on it (BLPOP)
    FixedKey("wake", "list", "other", rare=True),
    # the de-dup window: completed id -> when it is forgotten (ms); pruned in
    # bounded batches by clean and by push (dedup.lua)
    FixedKey("dedup", "zset", "other", rare=True),
    # a sharded queue's retired shard (docs/DESIGN.md section 7, the tombstone): set by
    # reshard and before a drained shard is removed; push.lua refuses a push while it exists
    FixedKey("retired", "string", "other", rare=True),
    # history (the manual's "stats --history"): snapshots of P:counters, one per minute (kept
    # HISTORY_MINUTES) and one per hour (kept HISTORY_HOURS), score = the bucket (minutes
    # or hours since the epoch), member "<bucket>:<HISTORY_FIELDS' values, ':'-joined>";
    # written by the operations (lua/_history.lua), clean and history.lua, the first call of
    # each bucket only
    FixedKey("history", "zset", "other"),
    FixedKey("history_hourly", "zset", "other"),
    # batches (docs/DESIGN.md section 8): id -> "<state>:<batch>" for each live or dead item
    # of a batch (its state as its batch counts it, then the batch's name); dropped when the
    # item completes or is purged, by lua/_batch.lua's batch_move only (not a "meta" key:
    # a dead item keeps its entry, so requeue-dead counts it again)
    FixedKey("item_batch", "hash", "other", rare=True),
    # batches: the names of the batches with items held by push --after (P:after:<batch>)
    FixedKey("afters", "set", "other", rare=True),
    # batches: name -> when it was made (ms), for the consoles' list (the oldest entry whose
    # record is gone is dropped as each batch is made)
    FixedKey("batches", "zset", "other", rare=True),
    # fleet-wide limits (docs/DESIGN.md section 9): the queue's rate and in-flight cap, with
    # the rate's state (LIMIT_FIELDS), read by lease.lua; and wake-up tokens for clients held
    # back by the cap, one per lease freed by complete while a cap is set (at most
    # WAKE_TOKENS, expiring WAKE_TTL_MS after the last): they block on it (BLPOP)
    FixedKey("limits", "hash", "other", rare=True),
    FixedKey("freed", "list", "other", rare=True),
)
#: A tenant's sub-queue is ``P:<TENANT_QUEUE>:<tenant>`` (a LIST, like P:queue).
TENANT_QUEUE = "tenant"
#: The ring's name for the default tenant (the items of P:queue).
DEFAULT_TENANT = ""
#: The field of ``P:counters`` holding the queue's de-dup window in ms (absent: no window):
#: push sets it, complete reads it (one HGET per call) to know whether to remember ids.
DEDUP_WINDOW_FIELD = "dedup_window_ms"
#: The fields of ``P:fair`` (fair queues): the items the head tenant has had this turn, and
#: the items in the tenants' sub-queues (pending items, so named after the state).
FAIR_TURN_FIELD = "turn"
FAIR_PENDING_FIELD = ItemState.PENDING.value
#: The fields of ``P:limits`` (``F_<NAME>`` in Lua): the rate as the user wrote it
#: (``20/s``), its emission interval in microseconds (GCRA's T), the burst (items admitted at
#: once after a quiet spell), the in-flight cap, the rate's theoretical arrival time (µs), and
#: "1" once a tenant has a rate of its own (so one HMGET tells whether the queue has limits).
LIMIT_FIELDS = ("rate", "interval_us", "burst", "max_in_flight", "tat_us", "tenants")
#: A tenant's own rate on a fair queue: the same fields (rate, interval_us, burst, tat_us),
#: each ``<TENANT_LIMIT><tenant>:<field>`` in ``P:limits`` (:func:`tenant_limit_field`).
TENANT_LIMIT = "tenant:"


def tenant_limit_field(tenant: str, field: str) -> str:
    """The field of ``P:limits`` holding ``tenant``'s own ``field`` (a LIMIT_FIELDS name)."""
    return f"{TENANT_LIMIT}{tenant}:{field}"


#: The families of keys ``P:<family>:<id>`` that each item has: its data (peer-compatible),
#: the two generations' lease keys (v0.3 and v0.1, peer-compatible) and a dead item's data.
ITEM = "item"
LEASE = "lease"
LEASED_BY_SESSION = "leased_by_session"
DEAD_ITEM = "dead_item"
ITEM_FAMILIES = (ITEM, LEASE, LEASED_BY_SESSION, DEAD_ITEM)
#: The Lua helper ``<name>(id)`` that each family's key gets in the scripts (scripts.py
#: generates them: no Lua file spells a key suffix).
ITEM_KEY_HELPERS = {ITEM: "item_key", LEASE: "lease_key", LEASED_BY_SESSION: "lbs_key",
                    DEAD_ITEM: "dead_item_key"}
#: A sharded queue's own keys at its base prefix B, in the base tag's slot (no shard uses
#: them; docs/DESIGN.md section 7): ``B:shards``, the record (core/sharding/shardmeta.py), and
#: ``B:fronts``, the front-of-line hint (core/sharding/shardfront.py).
SHARDS = "shards"
FRONTS = "fronts"


def shards_key(base: str) -> str:
    """``B:shards``: the record of the sharded queue with base prefix ``base``."""
    return f"{base}:{SHARDS}"


def fronts_key(base: str) -> str:
    """``B:fronts``: the front-of-line hint of the sharded queue with base prefix ``base``."""
    return f"{base}:{FRONTS}"


def batch_verdict_key(base: str, name: str) -> str:
    """``B:batch_verdict:<name>``: the recorded ``--after-ok`` verdict of batch ``name`` of
    the sharded queue with base prefix ``base`` (:data:`BATCH_VERDICT`)."""
    return f"{base}:{BATCH_VERDICT}:{name}"


#: The audit trail's key ``P:audit`` (:meth:`Keys.audit`): not a fixed key (no script reads it).
AUDIT = "audit"
#: The family of a worker session's control key ``P:control:<digest>`` (:meth:`Keys.control`).
CONTROL = "control"
#: The families of a batch's keys ``P:<family>:<batch>`` (docs/DESIGN.md section 8): its
#: record (a hash of counts, core/contract/batches.py) and the list its finishing step pushes a
#: token to (``rq-cli wait`` blocks on it).
BATCH = "batch"
BATCH_WAKE = "batch_wake"
#: ... and the hash of its items' results (id -> the result ``complete`` was given).
RESULTS = "results"
#: ... and the list of the items ``push --after`` holds until it is done (entries: a mode
#: character, batches.AFTER_ANY or AFTER_OK, then the id).
AFTER = "after"
BATCH_FAMILIES = (BATCH, BATCH_WAKE, RESULTS, AFTER)
#: A sharded queue's ``B:batch_verdict:<batch>`` at its base prefix: the ``--after-ok``
#: verdict of the batch's held items ("1": it has a dead item, "0": none), recorded once
#: (SET NX) by the first client that releases them, read by every later release, so every
#: shard's part follows one verdict (core/operations/batchops.py ``release``).
BATCH_VERDICT = "batch_verdict"
#: Every family of keys ``P:<family>:<name>`` (a name being an item id or a tenant): what
#: the name rule below is derived from, with the fixed keys' names.
NAME_FAMILIES = (*ITEM_FAMILIES, TENANT_QUEUE)
FIXED_NAMES = frozenset(k.name for k in FIXED_KEYS)


def prefix_collision(prefix: str) -> str | None:
    """Why queue prefix ``prefix`` would share keys with another queue, or None.

    Queue ``Q``'s names ``Q:<family>:<name>`` are the keys of queue ``Q:<family>`` (its
    fixed key ``<name>``, or an item's key when the name reads ``<family>:<id>``), and of
    every queue ``Q:<family>:...``: so no prefix has a family's name as a ``:``-separated
    segment after its first one. A prefix with a control character (NUL, a line break)
    cannot be passed to a worker's command in an environment variable, or printed on one line.
    """
    if any(c < " " or c == "\x7f" for c in prefix):
        return "it holds a control character (NUL, a line break, ...)"
    segments = prefix.split(":")
    for i, segment in enumerate(segments[1:], 1):
        if segment in NAME_FAMILIES:
            owner = ":".join(segments[:i])
            return (f"the segment {segment!r} would make its keys those of queue {owner!r} "
                    f"({owner}:{segment}:<name>)")
    return None


def name_collision(name: str) -> str | None:
    """Why an item id or a tenant ``name`` would give this queue a key of another queue
    (``P:<family>:<name>`` read as queue ``P:<family>``'s key), or None: the name, or its
    last ``:``-separated segment, is a fixed key's name (``queue``, ``processing``, ...), or
    a segment before the last is a family's (``item:5``). An id with a NUL cannot reach an
    environment variable or a command line (a worker's command gets its id in both)."""
    if "\0" in name:
        return "it holds a NUL character"
    segments = name.split(":")
    if segments[-1] in FIXED_NAMES:
        return (f"{segments[-1]!r} names a queue's own key, so P:lease:{name} would be a key "
                f"of queue P:lease{name[:-len(segments[-1])].rstrip(':') and ':'}"
                f"{name[:-len(segments[-1])].rstrip(':')}")
    for segment in segments[:-1]:
        if segment in NAME_FAMILIES:
            owner = ":".join(segments[:segments.index(segment)])
            return (f"the segment {segment!r} makes P:lease:{name} a key of queue "
                    f"P:lease{':' if owner else ''}{owner}")
    return None


#: per-item bookkeeping keyed by id (role "meta"), by type
META_HASHES = tuple(k.name for k in FIXED_KEYS if k.role == "meta" and k.type == "hash")
META_ZSETS = tuple(k.name for k in FIXED_KEYS if k.role == "meta" and k.type == "zset")


#: The first line of every script. Dragonfly refuses a script that touches keys it was not
#: given in KEYS unless the script declares this flag; every rq-cli script derives its keys
#: from the prefix. Redis and Valkey read the line as a comment.
DRAGONFLY_FLAGS = "--!df flags=allow-undeclared-keys"
#: The oldest server the scripts run on (they use ``RPOP key count``, ``ZMSCORE``, ``LPOS``).
MIN_REDIS_VERSION = "6.2"
#: The error code of the reply a script gives on a server older than Redis 6 (no
#: ``redis.setresp`` in its Lua), before it touches any key.
OLD_SERVER_ERROR = "RQCLI_OLD_SERVER"
#: The line of every script, before any command, that refuses such a server.
OLD_SERVER_CHECK = (f"if not redis.setresp then return redis.error_reply("
                    f"'{OLD_SERVER_ERROR} this server is older than Redis 6') end")


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
        return f"{self.prefix}:{ITEM}:{item_id}"

    def lease(self, item_id: str) -> str:
        """v0.3 lease key."""
        return f"{self.prefix}:{LEASE}:{item_id}"

    def leased_by_session(self, item_id: str) -> str:
        """v0.1 lease key."""
        return f"{self.prefix}:{LEASED_BY_SESSION}:{item_id}"

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
        return f"{self.prefix}:{DEAD_ITEM}:{item_id}"

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
    def holders(self) -> str:
        """hash id -> the session that leased it last: kept when the lease runs out, so an
        abandoned item names the worker (``<host>:<pid>:<random>``) that held it."""
        return f"{self.prefix}:holders"

    @property
    def dedup(self) -> str:
        """zset id -> expiry (ms): ids completed within the de-dup window, refused by push."""
        return f"{self.prefix}:dedup"

    @property
    def retired(self) -> str:
        """string: present once a resize retired this shard of a sharded queue (push refuses)."""
        return f"{self.prefix}:retired"

    @property
    def leases(self) -> str:
        """zset id -> lease deadline (ms) of leases granted or seen by rq-cli (for stats)."""
        return f"{self.prefix}:leases"

    @property
    def history(self) -> str:
        """zset minute -> a snapshot of P:counters taken in that minute (``stats --history``)."""
        return f"{self.prefix}:history"

    @property
    def history_hourly(self) -> str:
        """zset hour -> a snapshot of P:counters taken in that hour."""
        return f"{self.prefix}:history_hourly"

    @property
    def audit(self) -> str:
        """list, newest first: the audit trail, a JSON entry per repair made from the CLI or a
        console (core/operations/audit.py), kept to limits.AUDIT_KEPT; never touched by the scripts,
        so ``purge --state all`` leaves it (and records itself in it)."""
        return f"{self.prefix}:{AUDIT}"

    def control(self, session: str) -> str:
        """string + TTL: what a console asked worker ``session`` to do (drain or stop),
        read by that worker (core/operations/control.py) until it expires. Named by a digest of the
        session (16 hex digits, no ``:``), so no session can spell another key's name."""
        digest = hashlib.blake2b(session.encode(), digest_size=8).hexdigest()
        return f"{self.prefix}:{CONTROL}:{digest}"

    # -- fleet-wide limits -------------------------------------------------------------
    @property
    def limits(self) -> str:
        """hash: the queue's limits (LIMIT_FIELDS), read by every rq-cli lease."""
        return f"{self.prefix}:limits"

    @property
    def freed(self) -> str:
        """LIST of wake-up tokens for clients held back by the in-flight cap (BLPOP)."""
        return f"{self.prefix}:freed"

    # -- fair queues -------------------------------------------------------------------
    @property
    def tenants(self) -> str:
        """LIST, the ring of tenants with work; its right end has the turn."""
        return f"{self.prefix}:tenants"

    @property
    def fair(self) -> str:
        """hash: "turn", items the tenant at the ring's head has had in its current turn;
        "pending", items in the tenants' sub-queues. Exists once the queue has had tenants."""
        return f"{self.prefix}:fair"

    @property
    def wake(self) -> str:
        """LIST of wake-up tokens, one per item put in line on a fair queue (at most
        WAKE_TOKENS, gone WAKE_TTL_MS after the last): ``lease --wait`` blocks on it."""
        return f"{self.prefix}:wake"

    @property
    def tenant_weights(self) -> str:
        """hash tenant -> weight (items per turn; absent = 1)."""
        return f"{self.prefix}:tenant_weights"

    @property
    def item_tenant(self) -> str:
        """hash id -> tenant of each live tenanted item (so it returns to its tenant)."""
        return f"{self.prefix}:item_tenant"

    def tenant_queue(self, tenant: str) -> str:
        """The sub-queue (LIST) of ``tenant``; the default tenant's is P:queue."""
        if tenant == DEFAULT_TENANT:
            return self.queue
        return f"{self.prefix}:{TENANT_QUEUE}:{tenant}"

    # -- batches -----------------------------------------------------------------------
    @property
    def item_batch(self) -> str:
        """hash id -> "<state>:<batch>" of each live or dead batch item."""
        return f"{self.prefix}:item_batch"

    def batch(self, name: str) -> str:
        """hash: batch ``name``'s record (core/contract/batches.py RECORD_FIELDS)."""
        return f"{self.prefix}:{BATCH}:{name}"

    def results(self, name: str) -> str:
        """hash id -> result of batch ``name``'s completed items (``rq-cli results``)."""
        return f"{self.prefix}:{RESULTS}:{name}"

    def after(self, name: str) -> str:
        """LIST of the items ``push --after`` holds until batch ``name`` is done."""
        return f"{self.prefix}:{AFTER}:{name}"

    @property
    def batches(self) -> str:
        """ZSET batch name -> when it was made (ms): the batches the consoles list."""
        return f"{self.prefix}:batches"

    @property
    def afters(self) -> str:
        """SET of the batches with items held by ``push --after``."""
        return f"{self.prefix}:afters"

    def batch_wake(self, name: str) -> str:
        """LIST: the token batch ``name``'s finishing step pushes (``rq-cli wait``)."""
        return f"{self.prefix}:{BATCH_WAKE}:{name}"

    # -- patterns and groups ---------------------------------------------------------
    @property
    def item_pattern(self) -> str:
        """SCAN pattern matching every item data key of this queue, and nothing else's."""
        return f"{glob_escape(self.prefix)}:{ITEM}:*"

    @property
    def item_key_offset(self) -> int:
        """Length of ``P:item:``: ``key[offset:]`` is the id."""
        return len(self.prefix) + len(ITEM) + 2

    @property
    def script_keys(self) -> list[str]:
        """The KEYS every script receives: ``P:queue`` alone, for routing on a cluster;
        ``lua/_common.lua`` derives the others from the prefix, in the same hash slot."""
        return [self.queue]

    @property
    def marker_keys(self) -> list[str]:
        """Keys whose existence shows that a queue lives at this prefix (for discovery)."""
        return [self.queue, self.processing, self.delayed, self.dead, self.counters]


#: The fields of ``P:counters`` (codes.Counter), running totals that scripts count with
#: ``count(C_<FIELD>, n)``: what ``stats`` prints and ``stats --format prometheus`` exports
#: as ``rq_cli_<field>_total``.
COUNTER_FIELDS = COUNTERS

#: The counters a history snapshot keeps, in the order of its member's values (a new one goes
#: at the end: snapshots written before it read as 0 for it).
HISTORY_FIELDS = tuple(c.value for c in (Counter.PUSHED, Counter.COMPLETED, Counter.FAILED,
                                         Counter.DEAD, Counter.REQUEUED))

# Suffixes by which ``queues --discover`` recognises a prefix from a key name.
DISCOVERY_SUFFIXES = (":queue", ":processing", ":delayed", ":dead", ":counters")
