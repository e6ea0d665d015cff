"""``rq-cli dash``: a keyboard-driven terminal console (Textual) over every queue.

:mod:`.model` holds what is shown and done, without Textual (the reads a page at a time,
the actions with their command lines); :mod:`.app`, :mod:`.queue_screen` and :mod:`.item`
draw it. Textual is an optional extra (``pip install 'rqcli[dash]'``): ``rq-cli dash`` imports
this package, and the web view its modules without Textual (:mod:`.model`, :mod:`.asks`).
"""
