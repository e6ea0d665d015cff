"""The console model both consoles share, without Textual or Starlette: what ``rq-cli dash``
(:mod:`rq_cli.dash`, the terminal) and ``rq-cli web`` (:mod:`rq_cli.web`, the browser) show
and do. The two are siblings over it: neither imports the other.

- :mod:`.model`: the overview's rows and history, one queue's items a page at a time, filters;
- :mod:`.asks`: asking a holder's worker to drain or stop;
- :mod:`.servers`: each server's memory, an outage as one line;
- :mod:`.dataview`: an item's data as a console shows it.
"""
