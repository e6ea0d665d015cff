"""What Python, the Lua scripts and the peer clients agree on, each defined once:
the key schema, per-item fields, the Stats counts, the scripts' arguments
and replies, the limits, the environment, ids with their push time, names
and ids allowed, a batch's record, an error's group key.
"""
