"""``rq-cli doctor``'s checks: the server and the queue (``doctor``), ACL rights (``acl``),
the durability setting against the replicas (``durable``), a sharded queue's placement
(``shards``).
"""
