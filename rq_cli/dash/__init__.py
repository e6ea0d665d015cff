"""``rq-cli dash``: a keyboard-driven terminal console (Textual) over every queue.

It draws the console model both consoles share (:mod:`rq_cli.console`, no Textual: the reads a
page at a time, the actions with their command lines): :mod:`.app`, :mod:`.queue_screen` and
:mod:`.item` are its screens. Textual is an optional extra (``pip install 'rqcli[dash]'``): only
``rq-cli dash`` imports this package; the web view is its sibling over :mod:`rq_cli.console`.
"""
