"""What the front ends share: the operations beneath ``rq-cli``'s commands (rq_cli/cli/) and
its consoles (rq_cli/dash/, rq_cli/web/, over rq_cli/console/), siblings over it that never
import each other.

- :mod:`.targets`: a queue to read (its name, the queue, its server);
- :mod:`.filters`: the filter options (``--match``, ``--reason`` ...), defined once, and the
  compiled filter they make;
- :mod:`.polling`: each queue's stats read in turn, with the rates since the read before;
- :mod:`.scrub`: secrets out of every message.

Nothing here imports Typer, Click, rich or Textual, nor anything of rq_cli.cli, rq_cli.dash,
rq_cli.web or rq_cli.console (tests/core/test_architecture.py).
"""
