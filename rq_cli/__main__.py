"""``python -m rq_cli``: the same as the ``rq-cli`` command."""

from rq_cli.cli import main

if __name__ == "__main__":
    main()
