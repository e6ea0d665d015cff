"""The app as a whole: help for every command, --version, errors and exit codes, secrets,
output mode switches, and the start-up budget (what is imported)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import typer
from servers import free_port

from rq_cli import __version__
from rq_cli.cli import app, internals
from rq_cli.cli.commands import COMMANDS
from rq_cli.core.queue import WorkQueue

pytest_plugins = ["cli_helpers"]  # the cli(...) fixture


def all_commands():
    """(path, click command) for every command and group of the app."""
    root = typer.main.get_command(app)

    def walk(command, path):
        yield path, command
        ctx = typer.Context(command)
        for name in getattr(command, "list_commands", lambda ctx: [])(ctx):
            yield from walk(command.get_command(ctx, name), (*path, name))

    return list(walk(root, ()))


#: The commands, in help order: the table the app is built from (rq_cli/cli/commands.py).
EXPECTED_ORDER = tuple(c.name for c in COMMANDS)
EXPECTED = set(EXPECTED_ORDER)


def test_every_command_exists():
    top = {path[0] for path, _ in all_commands() if len(path) == 1}
    assert top == EXPECTED
    subs = {path for path, _ in all_commands() if len(path) == 2}
    assert subs == {("config", "path"), ("config", "show"), ("server", "status"),
                    ("server", "stop")}


@pytest.mark.parametrize("path, command", all_commands(), ids=lambda v: " ".join(v)
                         if isinstance(v, tuple) else "")
def test_every_command_and_option_has_help(path, command):
    assert (command.help or "").strip(), f"{' '.join(path) or 'rq-cli'} has no help text"
    if len(path) == 1 and path[0] not in ("config", "server"):
        assert "Example: rq-cli" in command.help, f"{path[0]} help has no example"
    for param in command.params:
        if getattr(param, "hidden", False) or param.name in ("help",):
            continue
        if param.param_type_name == "option":
            assert (param.help or "").strip(), f"{' '.join(path)} {param.opts} has no help"


@pytest.mark.parametrize("path", [p for p, _ in all_commands()])
def test_help_runs_without_a_server(cli, path):
    run = cli(*path, "--help", url="redis://127.0.0.1:1/0")
    assert run.exit_code == 0
    assert "Usage:" in run.stdout


def test_version(cli):
    run = cli("--version", url=None)
    assert run.exit_code == 0
    assert run.stdout == f"rq-cli {__version__}\n"


def test_no_command_shows_help(cli):
    run = cli(url=None)
    assert "Usage:" in run.stdout + run.stderr


def test_unknown_command_is_exit_2(cli):
    assert cli("frobnicate").exit_code == 2


# -- errors ------------------------------------------------------------------------------------
def test_unreachable_server_exit_69_masked(cli):
    url = f"redis://admin:hunter2@127.0.0.1:{free_port()}/0"
    run = cli("push", "q", "{}", url=url)
    assert run.exit_code == 69
    assert "cannot connect" in run.stderr
    assert "redis://admin:***@127.0.0.1" in run.stderr
    assert "hunter2" not in run.stdout + run.stderr
    assert len(run.stderr.strip().splitlines()) == 1
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize("args", [
    ("push", "q", "{}"), ("lease", "q"), ("complete", "q", "x"), ("fail", "q", "x"),
    ("extend", "q", "x"), ("stats", "q"), ("peek", "q"), ("clean", "q"),
    ("requeue-dead", "q", "--all"), ("purge", "q", "--yes"), ("pause", "q"), ("resume", "q"),
    ("queues",), ("stats",), ("doctor",), ("doctor", "q"),
])
def test_password_never_printed_by_any_command(cli, args):
    url = f"redis://u:pa55word@127.0.0.1:{free_port()}/0"
    run = cli(*args, url=url)
    assert run.exit_code == (6 if args[0] == "doctor" else 69), run  # doctor: unreachable
    assert "pa55word" not in run.stdout + run.stderr


def test_authentication_failure(cli, make_server):
    server = make_server(requirepass="right-one")
    bad = server.url.replace("redis://", "redis://:wrong-one@")
    run = cli("stats", "q", url=bad)
    assert run.exit_code == 69
    assert "authentication failed" in run.stderr
    assert "wrong-one" not in run.stderr
    good = server.url.replace("redis://", "redis://:right-one@")
    assert cli("stats", "q", url=good).exit_code == 0


def test_password_env_from_config(cli, make_server, tmp_path):
    server = make_server(requirepass="from-env")
    (tmp_path / "rq-cli.toml").write_text(
        f'[queues.q]\nurl = "{server.url}"\npassword_env = "Q_PASSWORD"\n')
    assert cli("push", "q", "{}", url=None, env={"Q_PASSWORD": "from-env"}).exit_code == 0
    run = cli("push", "q", "{}", url=None)
    assert run.exit_code == 78 and "Q_PASSWORD" in run.stderr


def test_wrong_type_key_exit_69(cli, r):
    r.set("q:queue", b"not a list")
    run = cli("push", "q", "{}")
    assert run.exit_code == 69
    assert "WRONGTYPE" in run.stderr
    assert r.get("q:queue") == b"not a list"


def test_bad_url_is_a_usage_error(cli):
    run = cli("stats", "q", url="http://example.invalid/")
    assert run.exit_code == 2
    assert "redis://" in run.stderr


def test_internal_error_is_one_line_exit_1(cli, monkeypatch):
    def boom(self, **kwargs):
        raise RuntimeError("something broke")

    monkeypatch.setattr(WorkQueue, "stats", boom)
    run = cli("stats", "q")
    assert run.exit_code == 1
    assert run.stderr.strip() == ("rq-cli: internal error: RuntimeError: something broke "
                                  "(set RQ_CLI_DEBUG=1 to see the traceback)")
    debug = cli("stats", "q", env={"RQ_CLI_DEBUG": "1"})
    assert debug.exit_code == 1 and "Traceback" in debug.stderr


def test_ctrl_c_is_130(cli, monkeypatch):
    def interrupted(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(WorkQueue, "lease", interrupted)
    run = cli("lease", "q")
    assert run.exit_code == 130
    assert "interrupted" in run.stderr


# -- output mode -------------------------------------------------------------------------------
def test_json_flag_and_env_on_a_terminal(cli):
    cli("push", "q", "{}")
    assert cli("--json", "stats", "q", tty=True).one["pending"] == 1
    assert cli("stats", "q", "--json", tty=True).one["pending"] == 1
    assert cli("stats", "q", tty=True, env={"RQ_CLI_JSON": "1"}).one["pending"] == 1
    assert not cli("stats", "q", tty=True).stdout.startswith("{")


def test_payload_is_never_read_as_markup(cli):
    cli("push", "q", "--raw", "--id", "m", "[bold]x[/bold] :smile:")
    run = cli("peek", "q", tty=True)
    assert "[bold]x[/bold] :smile:" in run.stdout


# -- start-up budget ---------------------------------------------------------------------------
def imported_modules(args, url=None):
    code = (
        "import json, sys\n"
        "from rq_cli.cli import main\n"
        "try:\n"
        f"    main({list(args)!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "sys.stderr.write(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env={"PATH": "/usr/bin:/bin", "RQ_CLI_NO_CONFIG": "1"})
    return set(json.loads(proc.stderr.strip().splitlines()[-1]))


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["push", "--help"]])
def test_help_and_version_import_neither_redis_nor_rich(args):
    mods = imported_modules(args)
    assert "redis" not in mods and "rich" not in mods


def test_push_does_not_import_rich(server_url, r):
    mods = imported_modules(["--url", server_url, "push", "q", "{}"])
    assert "redis" in mods and "rich" not in mods
    if internals.ENABLED:  # cli/internals.py: plain parameters skip Typer's adapters
        assert "pydantic" not in mods
    assert r.llen("q:queue") == 1


# -- cli/internals.py: the light converters behave like Typer's -----------------------------
@pytest.mark.parametrize("args, message", [
    (("lease", "q", "--lease", "abc"), "'abc' is not a number"),
    (("lease", "q", "--lease", "0"), "not in the range 0.001<=x"),
    (("lease", "q", "--count", "1.5"), "'1.5' is not an integer"),
    (("lease", "q", "--wait", "nan"), "not a finite number"),
    (("lease", "q", "--order", "sideways"), "is not one of 'strict', 'fair'"),
    (("peek", "q", "--state", "gone"), "is not one of 'pending'"),
])
def test_bad_option_values_are_usage_errors(cli, args, message):
    run = cli(*args)
    assert run.exit_code == 2
    assert f"Invalid value for '{args[2]}'" in run.stderr
    if internals.ENABLED:  # (plain Typer words the reason its own way)
        assert message in run.stderr


def test_bool_from_the_environment(cli):
    cli("push", "q", "{}")
    assert cli("stats", "q", tty=True, env={"RQ_CLI_JSON": "yes"}).one["pending"] == 1
    assert not cli("stats", "q", tty=True, env={"RQ_CLI_JSON": "0"}).stdout.startswith("{")
    assert cli("stats", "q", env={"RQ_CLI_JSON": "perhaps"}).exit_code == 2


def test_commands_are_built_lazily():
    command = typer.main.get_command(app)
    ctx = command.make_context("rq-cli", ["--help"], resilient_parsing=True)
    assert "purge" not in command.built  # not built yet
    assert command.get_command(ctx, "purge").name == "purge"
    assert list(command.built) == ["purge"]  # and nothing else was built on the way
    assert command.list_commands(ctx) == list(EXPECTED_ORDER)


def test_a_run_imports_only_the_command_module_it_runs():
    # the table's loaders are plain imports inside functions, run on first use: --version
    # imports no command module, and `push --help` only push's
    code = ("import json, sys\n"
            "from rq_cli.cli import main\n"
            "try:\n"
            "    main(sys.argv[1:])\n"
            "except SystemExit:\n"
            "    pass\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('rq_cli.cli.'))))\n")

    def command_modules(*args):
        out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                             text=True, timeout=60, env={"PATH": "/usr/bin:/bin",
                                                         "RQ_CLI_NO_CONFIG": "1"}).stdout
        heavy = {"rq_cli.cli.maintain", "rq_cli.cli.inspect", "rq_cli.cli.leasing",
                 "rq_cli.cli.work", "rq_cli.cli.dash", "rq_cli.cli.push"}
        return heavy & set(json.loads(out.strip().splitlines()[-1]))

    assert command_modules("--version") == set()
    assert command_modules("push", "--help") == {"rq_cli.cli.push"}


def test_url_from_the_environment(cli, server_url):
    assert cli("push", "q", "{}", url=None, env={"RQ_CLI_URL": server_url}).exit_code == 0
    shown = cli("config", "show", url=None, env={"RQ_CLI_URL": server_url}).one
    assert shown["url"] == server_url
    assert cli("stats", "q", url=None, env={"REDIS_URL": server_url}).one["pending"] == 1


def test_password_in_environment_url_is_masked(cli):
    url = f"redis://:envpass@127.0.0.1:{free_port()}/0"
    run = cli("stats", "q", url=None, env={"RQ_CLI_URL": url})
    assert run.exit_code == 69 and "envpass" not in run.stderr


def test_queue_names_complete_from_the_config(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    monkeypatch.chdir(tmp_path)
    (tmp_path / "rq-cli.toml").write_text("[queues.emails]\n[queues.events]\n[queues.sms]\n")
    env = {"_RQ_CLI_COMPLETE": "complete_bash", "COMP_WORDS": "rq-cli push e",
           "COMP_CWORD": "2", "RQ_CLI_CONFIG": None, "XDG_CONFIG_HOME": str(tmp_path)}
    result = CliRunner().invoke(app, [], env=env, prog_name="rq-cli")
    assert result.stdout.split() == ["emails", "events"]
