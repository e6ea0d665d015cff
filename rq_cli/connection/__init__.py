"""Connecting to a server: URLs (``urls``), clients (``connect``), the embedded
server (``embedded``, ``servers``) and redis-py's errors in rq-cli's words (``server_errors``).
"""
