"""The Typer app: global options, the command table, and the one place errors become exit codes.

Errors: every exception a command raises ends in :func:`report`, which prints one line on
stderr (``rq-cli: <message>``, URLs masked, secrets scrubbed) and picks the exit code:
an :class:`~rq_cli.errors.RqError` carries its own; a redis-py error is translated first
(:func:`rq_cli.connection.connect.translate_error`, exit 69); Ctrl-C is 130; a closed
stdout (``| head``) is 141 (128 + SIGPIPE, like any Unix tool killed by it) and silent;
anything else is a bug: exit 1, and ``RQ_CLI_DEBUG=1`` shows its traceback. Commands never
call ``sys.exit``.

It runs inside :class:`RqGroup.invoke`, so ``rq-cli`` and ``CliRunner`` behave the same.
"""

import contextlib
import os
import sys
import traceback
from typing import Annotated, Any, NoReturn

import typer
from typer.core import TyperGroup

from .. import __version__
from ..core.contract.env import (
    ENV_CONFIG,
    ENV_DEBUG,
    ENV_NO_CONFIG,
    ENV_REDIS_URL,
    ENV_URL,
    ENV_WAIT_REPLICAS,
    ENV_WAIT_TIMEOUT,
)
from ..errors import (
    BadInputError,
    ExitCode,
    ParameterError,
    RqError,
    UsageError,
    WrongTypeError,
)
from ..ops.filters import FLAG_OF
from ..ops.scrub import scrub
from ..output.render import Output, Terminal, debug_enabled, message
from ..settings import config as configmod
from ..settings.rules import parse_wait_replicas, wait_timeout_verdict
from . import internals, signals
from .audit import audit_trail
from .commands import BY_NAME, COMMANDS
from .common import READ_ONLY, JsonOpt, State
from .helptext import RqCommand


class RqGroup(TyperGroup):
    """The root command group: maps every exception of a command to a message and exit code.

    Start-up: commands (the table in :mod:`.commands`) are built from their functions on
    first use, through Click's documented lazy-loading hooks (``list_commands`` and
    ``get_command``), so a run builds only the command it runs; plain parameters skip
    pydantic (:mod:`.internals`).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.built: dict[str, Any] = {}  # commands built so far, by name

    def list_commands(self, ctx: Any) -> list[str]:
        return [c.name for c in COMMANDS]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = self.built.get(cmd_name)
        if command is None:
            if cmd_name not in BY_NAME:
                return super().get_command(ctx, cmd_name)
            command = self.built[cmd_name] = build_command(cmd_name)
        internals.install_params(command, ctx)
        if not BY_NAME[cmd_name].reports_stop:
            signals.release()  # (a signal held in start-up: "interrupted", exit 130)
        return command

    def main(self, *args: Any, **kwargs: Any) -> Any:
        prog_name = kwargs.get("prog_name") or "rq-cli"
        var = kwargs.get("complete_var") or f"_{prog_name}_COMPLETE".replace("-", "_").upper()
        if os.environ.get(var):  # a shell asks for candidates: print them one to a line
            internals.install_completion()
        return self._main_one_line(*args, **kwargs)

    def _main_one_line(self, *args: Any, **extra: Any) -> Any:
        """Click's ``main`` in its documented ``standalone_mode=False``: errors come back here,
        and each becomes ONE stderr line (Click's own usage box is four); then the exit.

        (Keywords as Click passes them; ``standalone_mode`` is keyword-only here.)
        """
        standalone_mode = extra.get("standalone_mode", True)
        extra["standalone_mode"] = False
        try:
            # (the repairs it makes: rq_cli/core/operations/audit.py)
            with audit_trail(extra.get("args")):
                code = super().main(*args, **extra)
            code = code if isinstance(code, int) else 0  # (a return value, or Exit's code)
        except typer.Abort:  # a prompt ended by Ctrl-D or Ctrl-C
            code = report(KeyboardInterrupt())
        except Exception as exc:
            code = usage(exc) if _is_click_error(exc) else report(exc)
        if standalone_mode:
            sys.exit(code)
        return code

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        internals.install_params(self, ctx, subcommands=False)
        try:
            return super().parse_args(ctx, args)
        except BrokenPipeError as exc:  # --help or --version | head: 141, like a command
            raise typer.Exit(report(exc)) from None

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort, typer.TyperException, SystemExit):
            raise  # Typer's own: usage errors (exit 2), --help, explicit exits
        except BaseException as exc:
            st = ctx.obj if isinstance(ctx.obj, State) else None
            if st is not None:
                st.read_only = ctx.invoked_subcommand in READ_ONLY
            raise typer.Exit(report(exc, st)) from None


def report(exc: BaseException, st: State | None = None) -> int:
    """Print the one-line message for ``exc`` on stderr; return the exit code."""
    if isinstance(exc, BrokenPipeError):
        _silence_stdout()
        return ExitCode.BROKEN_PIPE
    if isinstance(exc, KeyboardInterrupt):
        message("rq-cli: interrupted")
        return ExitCode.INTERRUPTED
    err: BaseException = exc
    if isinstance(exc, UnicodeEncodeError) and "surrogates not allowed" in str(exc):
        err = BadInputError("an argument is not valid UTF-8 (the shell passed bytes that are "
                            "not UTF-8 text); only push --raw DATA may be any bytes")
    elif not isinstance(exc, RqError) and st is not None and st.urls_used:
        from ..connection.connect import translate_error

        err = translate_error(exc, st.urls_used[-1], read_only=st.read_only) or exc
    if isinstance(err, WrongTypeError) and st is not None:
        from .common import name_wrong_type

        err = name_wrong_type(err, st.opened)
    if isinstance(err, ParameterError):  # the engine's keyword, said as the flag
        text, code = err.worded(FLAG_OF), int(err.exit_code)
    elif isinstance(err, RqError):
        text, code = str(err), int(err.exit_code)
    else:
        text = (f"internal error: {type(exc).__name__}: {exc} "
                f"(set {ENV_DEBUG}=1 to see the traceback)")
        code = ExitCode.INTERNAL
    if debug_enabled():
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    message("rq-cli: " + " ".join(scrub(text, st).split()))
    return int(code)


def _is_click_error(exc: BaseException) -> bool:
    """A ClickException (usage errors, bad option values): the Click Typer ships is not ours
    to import, and it has a ``format_message`` and an ``exit_code``."""
    return any(cls.__name__ == "ClickException" for cls in type(exc).__mro__)


def usage(exc: Any) -> int:
    """Print a Click error as one line (``rq-cli: <what>; see 'rq-cli lease --help'``)."""
    if type(exc).__name__ == "NoArgsIsHelpError":  # `rq-cli` alone: the help is the answer
        exc.show()
        return int(exc.exit_code)
    text = " ".join(exc.format_message().split()).rstrip(".")
    ctx = getattr(exc, "ctx", None)
    if ctx is not None:
        text += f"; see '{ctx.command_path} --help'"
    message("rq-cli: " + scrub(text, None))
    return int(exc.exit_code)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # not a real file (tests)
        pass


app = typer.Typer(
    name="rq-cli",
    cls=RqGroup,
    help="A reliable work queue in Redis or Valkey: push, lease, complete, inspect, repair.\n\n"
         "Tables on a terminal, JSON lines when piped. Exit codes: 0 ok, 1 internal error, "
         "2 usage, 3 nothing to do, 4 lease lost, 5 threshold breached or check failed "
         "(stats --check, doctor), 6 server unreachable (stats --check, doctor), "
         "7 warnings (doctor), 8 write not confirmed by the replicas in time (--wait-replicas), "
         "65 bad input, 69 server unavailable, 75 try again later (work --name in use), "
         "78 config error, 130 interrupted, 141 stdout closed early.",
    no_args_is_help=True,
    rich_markup_mode=None,  # plain help: --help must not import rich (start-up budget)
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(ctx: typer.Context, value: bool) -> None:
    if value and not ctx.resilient_parsing:  # completion parses resiliently: print nothing
        Output().write(f"rq-cli {__version__}\n")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    url: Annotated[str | None, typer.Option(
        "--url", envvar=ENV_URL, show_envvar=True, metavar="URL",
        help="Server for every queue, overriding the config: redis://, rediss://, unix://, "
             "redis+cluster://, redis+sentinel://, embedded:[DIR]. Default: the config, "
             f"${ENV_REDIS_URL}, {configmod.DEFAULT_URL}.")] = None,
    config: Annotated[str | None, typer.Option(
        "--config", envvar=ENV_CONFIG, show_envvar=True, metavar="PATH",
        help="Config file. Default: ./rq-cli.toml, then "
             "$XDG_CONFIG_HOME/rq-cli/config.toml (~/.config/...).")] = None,
    no_config: Annotated[bool, typer.Option(
        "--no-config", envvar=ENV_NO_CONFIG, show_envvar=True,
        help="Read no config file. A flag beats a variable: --config beats "
             "$RQ_CLI_NO_CONFIG, --no-config beats $RQ_CLI_CONFIG.")] = False,
    prefix: Annotated[bool, typer.Option(
        "--prefix", help="Treat every QUEUE as a raw key prefix, even a name the config "
                         "file defines.")] = False,
    as_json: JsonOpt = False,
    wait_replicas: Annotated[str | None, typer.Option(
        "--wait-replicas", envvar=ENV_WAIT_REPLICAS, show_envvar=True, metavar="N|all",
        help="Durability: acknowledge a write (push, complete, fail, requeue-dead, purge, "
             "work's outcomes) only once N replicas hold it (WAIT); unconfirmed in time: "
             "exit 8. all: every replica (as the sentinels list them, else the primary's): "
             "survives any single partition. Overrides the config's wait_replicas; 0: "
             "off.")] = None,
    wait_timeout: Annotated[float | None, typer.Option(
        "--wait-timeout", envvar=ENV_WAIT_TIMEOUT, show_envvar=True,
        metavar="SECONDS", help="How long a write waits for its replicas (default: the "
                                "config's wait_timeout, else 1).")] = None,
    version: Annotated[bool, typer.Option(
        "--version", callback=_version, is_eager=True, expose_value=True,
        help="Print the version and exit.")] = False,
) -> None:
    """Global options, then a command."""
    injected = ctx.obj  # tests pass a Terminal (or a State) as obj
    if isinstance(injected, State):
        ctx.obj = injected
        return
    given = {name: getattr(ctx.get_parameter_source(name), "name", "")
             for name in ("url", "config", "no_config")}
    for name, value, var in (("url", url, ENV_URL),
                             ("config", config, ENV_CONFIG)):
        if value == "":
            raise UsageError(f"--{name} cannot be empty (leave it out for the default)")
        if given[name] != "COMMANDLINE" and os.environ.get(var) == "":
            # (Click reads an empty variable as unset: the default would follow, silently)
            raise UsageError(f"${var} is set but empty: unset it for the default, or give it "
                             "a value")
    if given["url"] == "ENVIRONMENT":
        url = None  # config resolution reads $RQ_CLI_URL itself (and says so in config show)
    config, no_config = _config_choice(config, no_config, given)
    st = State(url=url, config_path=config, no_config=no_config, raw_prefix=prefix,
               as_json=as_json, terminal=injected if isinstance(injected, Terminal) else None,
               durability=_durability(wait_replicas, wait_timeout))
    ctx.obj = st
    ctx.call_on_close(st.close)


def _config_choice(config: str | None, no_config: bool,
                   given: dict[str, str]) -> tuple[str | None, bool]:
    """(--config, --no-config) as used: a flag beats an environment variable; the two at the
    same level contradict each other (exit 2). A path from $RQ_CLI_CONFIG is left for the
    config search to read, which names it so."""
    from_env = given["config"] == "ENVIRONMENT"
    if config and no_config:
        flags = (given["config"] == "COMMANDLINE", given["no_config"] == "COMMANDLINE")
        if flags == (True, True):
            raise UsageError("--config and --no-config contradict each other: give one")
        if flags == (False, False):
            raise UsageError(f"${ENV_CONFIG} and ${ENV_NO_CONFIG} "
                             "contradict each other: unset one")
        no_config = not flags[0]  # (the flag given wins)
    return (None if from_env else config), no_config


def _durability(replicas: str | None, timeout: float | None) -> dict[str, Any]:
    """The durability options the flags (or their environment variables) set: checked as
    the config file's are; a bad value is a usage error."""
    out: dict[str, Any] = {}
    if replicas is not None:
        out["wait_replicas"] = parse_wait_replicas(replicas)
    if timeout is not None:
        verdict = wait_timeout_verdict(timeout)
        if verdict is not True:
            raise UsageError(f"--wait-timeout {verdict} (got {timeout:g})")
        out["wait_timeout"] = float(timeout)
    return out


def build_command(name: str) -> Any:
    """The Click command for ``name`` (of the table in :mod:`.commands`), made by Typer's
    public ``get_command``."""
    target = BY_NAME[name].load()
    if isinstance(target, typer.Typer):
        return typer.main.get_command(target)
    single = typer.Typer(rich_markup_mode=None, add_completion=False)
    # (a command may name its Click class: Typer's documented `cls=`)
    single.command(name, cls=getattr(target, "command_class", RqCommand))(target)
    return typer.main.get_command(single)  # one command: Typer returns it as is


def main(argv: list[str] | None = None) -> None:
    """Run rq-cli with ``argv`` (default: the process's arguments); ends in ``SystemExit``."""
    command = typer.main.get_command(app)
    try:
        command.main(args=argv, prog_name="rq-cli")
    except Exception as exc:  # outside any command (should not happen): still one line
        sys.exit(report(exc))


def run() -> NoReturn:
    """The ``rq-cli`` console script: :func:`main`, then :func:`hard_exit`."""
    try:
        main()
    except SystemExit as done:
        hard_exit(done.code)
    hard_exit(0)  # (not reached: Click's standalone mode always ends in SystemExit)


def hard_exit(code: int | str | None) -> NoReturn:
    """End the process with ``code``, skipping the interpreter's teardown.

    Freeing the thousands of objects of redis-py, asyncio and Typer takes ~30 ms: a fifth
    of a ``push`` (start-up has a budget). Everything a normal exit does that matters
    still happens: stdout and stderr are flushed (a closed stdout gives 141, like a
    command writing to it), and atexit handlers run. With another thread still running,
    the exit is the normal one, which waits for it. (mypy ends its runs the same way.)
    """
    if isinstance(code, str):  # sys.exit("text"): the text on stderr, exit 1
        message(code)
        code = 1
    status = _flush(0 if code is None else int(code))
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        sys.exit(status)
    if not internals.fast_exit(status):  # RQ_CLI_PLAIN_TYPER=1: the normal exit
        sys.exit(status)
    os._exit(_flush(status))  # (again: for what the atexit handlers wrote)


def _flush(status: int) -> int:
    """Flush stdout and stderr; ``status``, or 141 if stdout was closed early."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        status = status or int(ExitCode.BROKEN_PIPE)
        _silence_stdout()  # so no later flush fails again
    except (OSError, ValueError, AttributeError):  # closed or replaced stdout
        pass
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stderr.flush()
    return status
