"""``rq-cli web``: the console served to a browser (Starlette and Uvicorn, the web extra).

A sibling of rq_cli/cli/ and rq_cli/dash/ over rq_cli/console/ and rq_cli/ops/: it shows and
does what the console model both consoles share (:mod:`rq_cli.console.model`) shows and does,
and imports neither the terminal console nor the command line (rq_cli/cli/web.py, the entry
point, starts it).

- :mod:`.guard`: who may ask (the token, bearer or basic auth) and the CSRF token of actions;
- :mod:`.pages`: the routes: overview, a queue's tabs, an item, the stylesheet;
- :mod:`.acts`: the confirmed actions, each POST redirected (303) to what it did;
- :mod:`.site`: what every page needs (the queues, the templates, refusals, links);
- :mod:`.views`: what a page shows, in plain values (state colours, sorting, the history as
  an inline SVG);
- :mod:`.serve`: the address to bind (loopback unless told) and the Uvicorn server.
"""
