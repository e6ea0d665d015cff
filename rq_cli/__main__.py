"""``python -m rq_cli``: the same as the ``rq-cli`` command."""

from rq_cli.cli import run

if __name__ == "__main__":
    run()
