"""The command table: every top-level rq-cli command, in help order, and where it lives.

One entry per command: its name and a small loader function whose body is a plain
``from .push import push``, so readers, mypy and the import graph see every command module,
while a run still imports only the command it runs: :class:`rq_cli.cli.root.RqGroup` calls
the loader on first use (Click's documented lazy-loading hooks). It is the only list of the
commands: the tests take their lists from the app, and tests/core/test_architecture.py
reads the imports inside these loaders as it reads any other import.

A new command: its module in rq_cli/cli/ named after it (help text with an ``Example:``), a
loader and one line here, its section with an example in the manual (docs/commands.md;
tests/cli/test_docs.py), the completions regenerated (``python scripts/gen_completions.py``;
the man pages are made when the wheel is built), its tests, and, if it prints JSON, its
schema (``SCHEMAS`` in rq_cli/output/shapes.py, rq_cli/schemas/) with a ``checked(...)`` call
in tests/cli/test_schemas.py.
"""

from collections.abc import Callable
from typing import Any, NamedTuple


class Command(NamedTuple):
    """A command's name and the function that imports and returns what defines it (a
    function, or a Typer app for a group). ``reports_stop``: the command ends the start-up
    hold of Ctrl-C and SIGTERM itself, and stops on SIGTERM as on Ctrl-C, saying what it did
    (:mod:`rq_cli.cli.signals`); for the others the hold ends once they are built."""

    name: str
    load: Callable[[], Any]
    reports_stop: bool = False


def load_push() -> Any:
    from .push import push

    return push


def load_lease() -> Any:
    from .leasing import lease

    return lease


def load_complete() -> Any:
    from .leasing import complete

    return complete


def load_fail() -> Any:
    from .leasing import fail

    return fail


def load_extend() -> Any:
    from .leasing import extend

    return extend


def load_stats() -> Any:
    from .inspect import stats

    return stats


def load_peek() -> Any:
    from .inspect import peek

    return peek


def load_queues() -> Any:
    from .inspect import queues

    return queues


def load_batch() -> Any:
    from .batches import batch

    return batch


def load_results() -> Any:
    from .batches import results

    return results


def load_wait() -> Any:
    from .batches import wait

    return wait


def load_doctor() -> Any:
    from .doctor import doctor

    return doctor


def load_holders() -> Any:
    from .holders import holders

    return holders


def load_audit() -> Any:
    from .audit import audit

    return audit


def load_errors() -> Any:
    from .errors import errors

    return errors


def load_clean() -> Any:
    from .maintain import clean

    return clean


def load_requeue_dead() -> Any:
    from .maintain import requeue_dead

    return requeue_dead


def load_purge() -> Any:
    from .maintain import purge

    return purge


def load_dedup() -> Any:
    from .dedup import dedup

    return dedup


def load_limit() -> Any:
    from .limit import limit

    return limit


def load_pause() -> Any:
    from .maintain import pause

    return pause


def load_resume() -> Any:
    from .maintain import resume

    return resume


def load_work() -> Any:
    from .work import work

    return work


def load_cancel() -> Any:
    from .cancel import cancel

    return cancel


def load_reshard() -> Any:
    from .reshard import reshard

    return reshard


def load_dash() -> Any:
    from .dash import dash

    return dash


def load_web() -> Any:
    from .web import web

    return web


def load_config() -> Any:
    from .config_cmd import config_app

    return config_app


def load_server() -> Any:
    from .server_cmd import server_app

    return server_app


COMMANDS: tuple[Command, ...] = (
    Command("push", load_push, reports_stop=True),
    Command("lease", load_lease),
    Command("complete", load_complete),
    Command("fail", load_fail),
    Command("extend", load_extend),
    Command("stats", load_stats),
    Command("peek", load_peek),
    Command("queues", load_queues),
    Command("batch", load_batch),
    Command("wait", load_wait),
    Command("results", load_results),
    Command("doctor", load_doctor),
    Command("holders", load_holders),
    Command("errors", load_errors),
    Command("audit", load_audit),
    Command("clean", load_clean),
    Command("requeue-dead", load_requeue_dead),
    Command("purge", load_purge),
    Command("dedup", load_dedup),
    Command("limit", load_limit),
    Command("pause", load_pause),
    Command("resume", load_resume),
    Command("work", load_work),
    Command("cancel", load_cancel),
    Command("reshard", load_reshard),
    Command("dash", load_dash),
    Command("web", load_web),
    Command("config", load_config),
    Command("server", load_server),
)

#: The table by name.
BY_NAME: dict[str, Command] = {c.name: c for c in COMMANDS}
