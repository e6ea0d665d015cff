"""One queue over N queues (docs/DESIGN.md section 7): the record, the write
side, every shard's operations, waiting, stats, resharding.
"""
