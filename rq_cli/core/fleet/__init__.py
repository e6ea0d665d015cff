"""Many queues at once: finding them, one script over many.
"""
