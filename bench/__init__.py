"""rq-cli's benchmark suite (issue 4): ``python -m bench`` (``--quick``, ``--case NAME``)."""
