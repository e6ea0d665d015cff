"""Every limit and batch size of the engine, defined once.

The CLI, the config file checks and the engine read these names; change a limit here and
every check and message follows. This module imports nothing.
"""

DAY = 86400
#: Longest lease, in seconds (a year).
MAX_LEASE_SECONDS = 365 * DAY
#: Longest delay, expiry or retry delay accepted, in seconds (ten years, leap days included).
MAX_DELAY = 10 * 366 * DAY
MAX_DELAY_TEXT = "ten years"
MAX_LEASE_TEXT = "a year"
#: Highest max_attempts a queue may set (0 means unlimited).
MAX_ATTEMPTS = 1_000_000_000
#: Longest accepted id, in bytes.
MAX_ID_BYTES = 4096
#: Most items one lease call (or ``lease --count``) returns.
MAX_COUNT = 10_000
#: Fleet-wide limits (``rq-cli limit``): the largest burst of a rate (items at once), and the
#: highest in-flight cap.
MAX_BURST = MAX_COUNT
MAX_IN_FLIGHT = MAX_ATTEMPTS

#: Most items one ``push`` call writes per script call (``--batch-size``).
MAX_PUSH_BATCH = 5000
#: Bulk push (bulk.py): script calls written to the connection before the oldest reply is
#: read; and the longest data whose bulk-string head a transaction's writer (bulk_tx.py)
#: looks up in a table (made on first use) rather than formats.
SEND_AHEAD = 3
LENGTH_HEADS = 4096
#: Most values one Lua ``unpack()`` gets (past a few thousand it overflows the C stack): the
#: scripts' multi-value commands are chunked at this (``UNPACK_CHUNK`` in Lua).
UNPACK_CHUNK = 4000
#: Ids a lease call promotes from P:delayed, and looks at beyond the items it wants, at most.
LEASE_LOOKAHEAD = 1000
#: A processing list up to this long is searched from its oldest end when an id leaves it
#: (complete, fail, cancel); a longer one from the end the id's lease deadline is nearer
#: (``unlist`` in lua/_common.lua: settling the newest of a long list costs what the oldest do).
UNLIST_SHORT = 1000
#: Most sightings (P:suspects fields) clean keeps without pruning the stale ones.
SUSPECTS_KEPT = 5000
#: Least time (ms) an id must sit in the v0.1 cleaning journal, lease-less and in no list,
#: before clean recovers it, whatever the grace period: a live peer cleaner holds an id
#: there for four round trips, with the id in no list between its LREM and its LPUSH; an
#: id recovered while that cleaner is only slow (a stalled thread) is then pushed by both,
#: and two peer workers each complete one copy. A minute there means the cleaner crashed.
JOURNAL_GRACE_MS = 60_000

#: Most items or ids one script call handles: keeps every call short, so the server goes on
#: serving other clients during bulk work.
BATCH = 1000
#: Most ids one complete script call settles, and one fail or cancel call (their per-item
#: work is heavier: a lease dropped, a retry queued or a dead letter written each): keeps
#: every such call well under 20 ms of server time wherever the ids sit in a processing list
#: of millions (a fail of 1,000 ids took 42-56 ms, a complete 14-21 ms, loaded machine;
#: bench/farend.py). A bigger request is several calls, sent BATCH ids to one pipeline (one
#: round trip), each call atomic per item (WorkQueue.per_batch). extend and retake take
#: SETTLE_CHUNK ids a call (1,000 took 10 ms of CPU), release FAIL_CHUNK (its per-id work is
#: fail's: 1,000 took 11 ms; bench/farend.py).
SETTLE_CHUNK = 250
FAIL_CHUNK = 100
#: Items per script call for purge and requeue-dead, whose per-item work is heavier: keeps
#: each call around 10 ms, so other clients wait no longer than that.
SLOW_BATCH = 200
#: Most items one lease script call takes: a lease of more is several calls, each well
#: under 20 ms of server time.
LEASE_CHUNK = 500
#: Length of the ids push makes at random (hex of 16 random bytes, as the peers' uuid4 hex).
FRESH_ID_LEN = 32
#: The ids push makes carry the client's reading of the server's clock (core/contract/ages.py); an
#: item whose id's time is off by more than this (ms) when the server runs its push gets a
#: P:enqueued stamp of the server's own time. (250 ms stamped about one batch in 300 of a
#: bulk push of 1 KB items on a loaded 2-core machine: batches wait in the pipeline.)
PUSH_STAMP_SLACK_MS = 1000
#: Fair queues: wake-up tokens kept at most (P:wake; one per item put in line wakes one
#: waiting ``lease --wait``), and how long they last after the last one (ms): a token nobody
#: took costs a later waiter one lease that finds nothing.
WAKE_TOKENS = 64
WAKE_TTL_MS = 1000
#: Longest tenant name, in bytes.
MAX_TENANT_BYTES = 256
#: Highest tenant weight (items per turn).
MAX_TENANT_WEIGHT = 1000
#: Ids of processing one ``holders`` script call reads: about 4 ms of server time (four
#: multi-key reads of the page; 1,000 took 8-10 ms on the reference machine).
HOLDERS_PAGE = 500
#: Longest single blocking wait, in seconds (the client's socket timeout must exceed it).
BLOCK_CHUNK = 2.0
#: Longest wait for replicas to confirm a write (``wait_timeout``, seconds): WAIT blocks
#: the connection, so the client's socket timeout (5 s) must exceed it.
MAX_WAIT_TIMEOUT = 4.0
#: ``wait_fsync``: the longest WAIT sent before each WAITAOF (seconds). A replica answers the
#: primary's ask for its offsets (REPLCONF GETACK, which WAIT and WAITAOF both send) as soon
#: as it reads it, before it writes to its append-only file the write that came with it, and
#: says it wrote it only in its once-a-second report: WAITAOF alone took about 1 s on an
#: idle Valkey 9.1.2 pair. The WAIT first makes WAITAOF's own ask reach the replica after it
#: has written (and, with appendfsync always, synced) the write: a few ms. WAITAOF decides;
#: a WAIT that times out only delays it, so the two wait at most wait_timeout + this (under
#: the client's 5 s socket timeout with MAX_WAIT_TIMEOUT).
WAITAOF_NUDGE = 0.5
#: Most replicas a write may wait for (``wait_replicas``).
MAX_WAIT_REPLICAS = 100
#: ``wait_replicas = "all"``: every replica the deployment has (as the sentinels list them,
#: or as the primary counts them when the queue first writes); the setting that survives
#: any single partition (the manual's "Guarantees").
ALL_REPLICAS = "all"
#: Seconds between a durable client's role checks behind Sentinel (the worker's too): a
#: primary the sentinels demoted goes on taking writes until it is told (11-12 s measured
#: after a partition heals), all thrown away when it is; the client follows the sentinels
#: within this, and re-reads their replica list for ``wait_replicas = "all"``.
ROLE_CHECK = 1.0
#: Longest grace period that clean waits out itself to look again (seconds).
MAX_CLEAN_WAIT = 60.0
#: Clean: past-due ids of P:expires (push --expire) one call dead-letters at most, and how
#: far from P:queue's right end it looks for each pending one (LPOS MAXLEN, then LREM: two
#: scans of that many ids at most per id; an item farther in line waits for a lease).
EXPIRED_BATCH = 100
EXPIRED_REACH = 1000
#: Ids of the de-dup window whose time is over that a push forgets, and a complete forgets
#: beyond one per id it remembers (clean forgets the rest, in batches).
DEDUP_PRUNE = 10
#: Ids light clean samples from each per-item bookkeeping key (FIXED_KEYS role "meta") at the
#: end of a pass, dropping the bookkeeping of those whose item is gone (a peer completed it).
PRUNE_SAMPLE = 100
#: Ids at the tail of processing that stats looks at for the other generation's lease keys.
GENERATION_SAMPLE = 100
#: Ids of processing one page of stats' count of the leases rq-cli has no live record of (a
#: peer's, by its lease key: peers never write P:leases) reads: four multi-key reads, as a
#: ``holders`` page. stats reads one page in its own call, and the rest of processing a page
#: per call, only while processing holds more ids than P:leases counts live leases.
LEASED_PAGE = 500
#: Fair queues: tenants of the ring whose oldest pending item stats looks at for the oldest
#: pending age (two reads each; a queue with more tenants with work gets the oldest of these
#: and the default tenant's, and as the ring turns, of others on the next call).
TENANT_AGE_SAMPLE = 100
#: Deepest nesting of arrays and objects rq-cli reads as JSON in a payload: deeper data is
#: refused by push and shown as text by the readers, on every Python version (the stdlib's
#: decoder recurses per level; its limit differs between versions, orjson's is 1024).
MAX_JSON_DEPTH = 512
#: Deepest ``--match`` expression accepted (levels of its syntax tree: ``!!a`` is 3): JMESPath
#: parses and evaluates recursively, and a few hundred levels exhaust Python's stack.
MAX_MATCH_DEPTH = 100
#: History (``stats --history``): per-minute snapshots kept (7 days) and per-hour ones (90
#: days); a snapshot older than that is dropped when a newer one is written.
HISTORY_MINUTES = 7 * 24 * 60
HISTORY_HOURS = 90 * 24
#: Longest history kept, and so the longest ``stats --history --since`` (seconds): 90 days;
#: and the longest read per minute (7 days): longer is read per hour.
MAX_SINCE = HISTORY_HOURS * 3600
MAX_MINUTES_SINCE = HISTORY_MINUTES * 60
#: History snapshots read per call (ZRANGEBYSCORE ... LIMIT): well under a millisecond each.
HISTORY_PAGE = 2000
#: Seconds between a worker's calls that snapshot the history (each bucket is written once,
#: by the first call in it: three calls a minute make sure no minute is missed).
HISTORY_EVERY = 20.0
#: Seconds between a worker's looks at its control key (a console asking it to drain or
#: stop: core/operations/control.py), one GET per queue it works; and how long an ask is kept (a
#: dead worker's ask is gone after this).
CONTROL_EVERY = 1.0
#: Entries an audit trail keeps (``P:audit``, core/operations/audit.py): the oldest beyond are
#: dropped as each is written; ``rq-cli audit`` reads at most these (one LRANGE, well under 1 ms).
AUDIT_KEPT = 1000
CONTROL_TTL = 600

# -- sharded queues (docs/DESIGN.md section 7)
#: Seconds a client keeps a sharded queue's record (P:shards) before reading it again
#: while it works.
SHARD_META_REFRESH = 1.0
#: Seconds before a client tries again a re-read that could not reach the record's server (a
#: failing call costs the cluster client a rediscovery: tried every period, it left a worker
#: little time for the other shards); under SHARD_SETTLE.
SHARD_META_RETRY = 5.0
#: Seconds after a resize before a drained shard may be removed (ten refresh periods: every
#: working client has read the new list by then).
SHARD_SETTLE = 10.0
#: The most shards one queue may have.
MAX_SHARDS = 256
#: Salts tried per shard when looking for a slot on the emptiest primary.
MAX_SHARD_SALT = 4096
#: Seconds a shard whose server failed a lease call is left out of lease passes.
SHARD_DOWN_PAUSE = 1.0
#: Seconds a thread rests after its shard's call failed (a primary failing over).
SHARD_WAIT_PAUSE = 0.5
#: How many copies of a sharded queue's record (P:shards) a Cluster keeps.
RECORD_COPIES = 4
#: The most queues one pipeline carries (a bounded batch: 500 stats calls are a few ms of
#: the server's time in all, each a call of its own).
PIPELINE_QUEUES = 500

# -- bulk reads and repairs
#: Filtered repair (filtering.py): items read per peek call, and acted on per script call
#: (requeue_dead by ids, purge_ids): each well under a millisecond of server time, so a busy
#: or shared server that stalls mid-call still answers other clients within a few ms (bench
#: case "filter").
FILTER_PAGE = 100
FILTER_CHUNK = min(100, SLOW_BATCH)
#: Matched ids a dry run keeps as a sample (and skipped ids a requeue keeps, to name them).
FILTER_SAMPLE = 10
#: Longest --rate of a filtered repair accepted (items per second); 0 and below are refused.
MAX_FILTER_RATE = 1_000_000
#: Deep clean (deep.py): list elements per LRANGE/ZRANGE page, and the COUNT of its
#: SCAN/HSCAN/ZSCAN calls (a few ms of server time per call).
DEEP_PAGE = 10_000
DEEP_SCAN_COUNT = 5_000
#: Error groups (errgroups.py): fields one HSCAN call asks for (a hint to the server): on a
#: hash of 1,000,000 fields a call took 0.3 ms (median) and 0.85 ms (p99); 250 had a p99 of
#: 6.7 ms (the manual's "rq-cli errors").
ERRGROUP_SCAN_COUNT = 100
#: Longest error text read for its error group's pattern (a traceback's tail varies; its
#: head names the cause).
MAX_ERROR_CHARS = 2000
#: Batches (docs/DESIGN.md section 8): how long a push stream holds its batch open (ms)
#: past its last call; a stream renews it with every call and closes it at its end, so a
#: batch does not finish between two calls of one push, and a crashed pusher's batch can
#: finish this long after its last call.
BATCH_OPEN_MS = 600_000
#: Longest result kept for a batch item (``complete --result``, ``work --result stdout``:
#: a longer output is cut to this, and the worker says so), in bytes.
RESULT_MAX = 65536
#: Items held by ``push --after`` that the step finishing their batch releases (the rest:
#: lease and clean, in steps of :data:`AFTER_LEASE` and of this many).
AFTER_BATCH = 1000
#: Items held by ``push --after`` for a finished batch that one lease call releases (a
#: batch of more than AFTER_BATCH of them, or one forgotten): bounded work per lease.
AFTER_LEASE = 100
#: Longest batch name, in bytes.
MAX_BATCH_BYTES = 256
