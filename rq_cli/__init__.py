"""rq-cli: a reliable work queue in Redis or Valkey, wire-compatible with redis-work-queue."""

__version__ = "0.1.0"
