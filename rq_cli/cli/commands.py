"""The command table: every top-level rq-cli command, in help order, and where it lives.

One entry per command: its name, the module that defines it (an absolute, importable
name) and the attribute (a function, or a Typer app for a group). It is the only list of
the commands: :class:`rq_cli.cli.root.RqGroup` builds a command from it on first use
(Click's documented lazy-loading pattern, so a run imports only the command it runs), the
tests take their lists from the app, and tests/core/test_architecture.py reads each entry as an
import of ``rq_cli.cli.root`` (so a cycle through a command module is still seen).

A new command: its module in rq_cli/cli/ (help text with an ``Example:``), one line here,
its README entry (tests/cli/test_docs.py), the completions regenerated (``python
scripts/gen_completions.py``), its tests, and, if it prints JSON, its schema (``SCHEMAS`` in
rq_cli/shapes.py, rq_cli/schemas/) with a ``checked(...)`` call in tests/cli/test_schemas.py.
"""

from typing import NamedTuple


class Command(NamedTuple):
    """A command's name and the ``module``'s ``attribute`` that defines it."""

    name: str
    module: str
    attribute: str


COMMANDS: tuple[Command, ...] = (
    Command("push", "rq_cli.cli.push", "push"),
    Command("lease", "rq_cli.cli.leasing", "lease"),
    Command("complete", "rq_cli.cli.leasing", "complete"),
    Command("fail", "rq_cli.cli.leasing", "fail"),
    Command("extend", "rq_cli.cli.leasing", "extend"),
    Command("stats", "rq_cli.cli.inspect", "stats"),
    Command("peek", "rq_cli.cli.inspect", "peek"),
    Command("queues", "rq_cli.cli.inspect", "queues"),
    Command("doctor", "rq_cli.cli.doctor", "doctor"),
    Command("holders", "rq_cli.cli.holders", "holders"),
    Command("errors", "rq_cli.cli.errgroups", "errors"),
    Command("clean", "rq_cli.cli.maintain", "clean"),
    Command("requeue-dead", "rq_cli.cli.maintain", "requeue_dead"),
    Command("purge", "rq_cli.cli.maintain", "purge"),
    Command("dedup", "rq_cli.cli.dedup", "dedup"),
    Command("pause", "rq_cli.cli.maintain", "pause"),
    Command("resume", "rq_cli.cli.maintain", "resume"),
    Command("work", "rq_cli.cli.work", "work"),
    Command("cancel", "rq_cli.cli.work", "cancel"),
    Command("dash", "rq_cli.cli.dash", "dash"),
    Command("config", "rq_cli.cli.config_cmd", "config_app"),
    Command("server", "rq_cli.cli.server_cmd", "server_app"),
)

#: The table by name.
BY_NAME: dict[str, Command] = {c.name: c for c in COMMANDS}
