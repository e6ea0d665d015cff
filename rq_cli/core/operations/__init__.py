"""One queue's operations behind WorkQueue (core/queue.py): the calls' base,
reads, repairs, deep clean, durability, fleet-wide limits, batches, the
audit trail and a console's asks.
"""
