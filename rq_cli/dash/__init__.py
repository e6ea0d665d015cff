"""``rq-cli dash``: a keyboard-driven terminal console (Textual) over every queue.

:mod:`.model` holds what is shown and done, without Textual (the reads a page at a time,
the actions with their command lines); :mod:`.app` and :mod:`.screens` draw it. Textual is
an optional extra (``pip install 'rqcli[dash]'``): only ``rq-cli dash`` imports this package.
"""
