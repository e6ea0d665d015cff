"""--help reads as the manual writes it: arguments as QUEUE, QUEUE..., [ID]... (never Typer's
``{QUEUE}`` or ``QUEUE <list[str]>``), options' values named (N, TEXT), ``work``'s usage line
with its ``-- COMMAND``, and no typo in clean's --grace."""

from __future__ import annotations

import re

import pytest

from rq_cli.cli.commands import COMMANDS

pytest_plugins = ["cli_helpers"]  # the cli(...) fixture

NAMES = [c.name for c in COMMANDS] + ["config path", "config show", "server status",
                                      "server stop"]


@pytest.mark.parametrize("name", NAMES)
def test_help_names_arguments_and_values_plainly(cli, name):
    run = cli(*name.split(), "--help", url=None)
    assert run.exit_code == 0, run
    assert not re.search(r"\{[A-Z]+\}", run.stdout), run.stdout
    # a type in angle brackets (a choice list <a|b> names its values, and stays)
    assert not re.search(r"<(?:list\[|str>|int|float)", run.stdout), run.stdout


def test_work_usage_shows_the_command_after_two_dashes(cli):
    usage = cli("work", "--help", url=None).stdout.splitlines()[0]
    assert usage == "Usage: rq-cli work [OPTIONS] QUEUE... -- COMMAND [ARGS]..."


def test_optional_ids_and_queues_in_usage(cli):
    assert cli("requeue-dead", "--help", url=None).stdout.splitlines()[0] == \
        "Usage: rq-cli requeue-dead [OPTIONS] QUEUE [ID]..."
    assert cli("stats", "--help", url=None).stdout.splitlines()[0] == \
        "Usage: rq-cli stats [OPTIONS] [QUEUE]..."


def test_clean_grace_help_reads(cli):
    text = " ".join(cli("clean", "--help", url=None).stdout.split())
    assert "seen so for" not in text and "only once seen lease-less this long" in text


def test_every_cron_line_of_the_manual_names_rq_cli_by_its_absolute_path():
    """cron's PATH is short (/usr/bin:/bin): a bare `rq-cli` there exits 127."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    bare = []
    for page in [root / "README.md", *sorted((root / "docs").rglob("*.md"))]:
        for block in re.findall(r"```cron\n(.*?)```", page.read_text(), re.S):
            for line in block.splitlines():
                if re.match(r"\s*[-*/0-9@]", line) and re.search(r"(?<![/\w-])rq-cli\b", line):
                    bare.append(f"{page.name}: {line}")
    assert bare == []
