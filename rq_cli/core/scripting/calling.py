"""How a queue's script calls reach the server: FCALL where it can, else EVALSHA.

The scripts of :data:`scripts.HOT` (what a worker runs per item) are also one Redis Functions
library (:func:`scripts.library`). Its helpers and key names are made once, when it loads,
instead of on every call: the server time per item is the engine's budget (docs/DESIGN.md
section 1). A :class:`Caller` tries ``FCALL`` first and settles on what the server offers:

- ``Function not found`` (a server that never had this library, or lost it to ``FUNCTION
  FLUSH``): ``FUNCTION LOAD`` it, once, then call again;
- a server without Functions (Redis 6.2, Dragonfly), or an ACL user without ``fcall`` or
  ``function|load``: the scripts run as EVALSHA, as every other script does, from then on;
- a cluster client, a pipeline, or ``RQ_CLI_FUNCTIONS=0`` in the environment: EVALSHA only.

Both ways run the same definitions and bodies (``lua/``), so they behave the same; the test
suite runs them both (Redis 6.2 has no Functions).

This module imports neither Typer nor rich.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..contract.env import ENV_FUNCTIONS, env_bool
from ..contract.util import is_cluster
from .scripts import HOT, library, source


def functions_allowed() -> bool:
    """False when the environment turns FCALL off (:data:`ENV_FUNCTIONS`)."""
    return env_bool(ENV_FUNCTIONS, default=True)


def _refusal(error: Exception) -> str:
    """What an error reply to FCALL or FUNCTION LOAD says: "missing" (no such function),
    "exists" (the library is there already), "unsupported" (the server, or the user's ACL,
    offers no Functions), or "" (anything else: the script's own error reply, a lost
    connection). (redis is imported here, not at the top: ``rq-cli --help`` loads this
    module and must not load redis, as in rq_cli/connection/connect.py.)"""
    from redis.exceptions import NoPermissionError, ResponseError

    if not isinstance(error, ResponseError):
        return ""
    message = str(error).lower()
    if isinstance(error, NoPermissionError) or "unknown command" in message or (
            "unknown subcommand" in message):
        return "unsupported"
    if "function not found" in message:
        return "missing"
    if "already exists" in message:
        return "exists"
    return ""


class Caller:
    """Runs the scripts of ``lua/`` on ``client``, by name."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self._scripts: dict[str, Any] = {}
        #: None: not tried yet; True: FCALL works; False: EVALSHA only
        self.functions: bool | None = None
        if is_cluster(client) or not functions_allowed():
            self.functions = False

    def script(self, name: str) -> Any:
        """Script ``name`` registered with the client (a redis-py Script: ``.sha``,
        ``.script``), made once."""
        script = self._scripts.get(name)
        if script is None:
            script = self._scripts[name] = self.client.register_script(source(name))
        return script

    def run(self, name: str, keys: Sequence[Any], argv: Sequence[Any],
            client: Any = None) -> Any:
        """The reply of script ``name`` with ``keys`` and ``argv``; ``client``: a pipeline
        (or another connection) to send it on instead, always as EVALSHA."""
        if client is None and self.functions is not False and name in HOT:
            done, reply = self._fcall(name, keys, argv)
            if done:
                return reply
        if client is None and is_cluster(self.client):
            return self._cluster_run(name, keys, argv)
        return self.script(name)(keys=keys, args=argv, client=client or self.client)

    def _cluster_run(self, name: str, keys: Sequence[Any], argv: Sequence[Any]) -> Any:
        """EVALSHA on a Cluster; a script missing there is loaded on each primary that answers
        (redis-py's own load asks every primary at once, and fails while one is down, which
        would stop every shard's calls with it)."""
        from redis.exceptions import NoScriptError

        script = self.script(name)
        try:
            return self.client.evalsha(script.sha, len(keys), *keys, *argv)
        except NoScriptError:
            self._load_script(script.script)
        return self.client.evalsha(script.sha, len(keys), *keys, *argv)

    def _load_script(self, code: str) -> None:
        """SCRIPT LOAD ``code``: on a Cluster on each primary that answers."""
        if not is_cluster(self.client):
            self.client.script_load(code)
            return
        from redis.exceptions import ConnectionError, TimeoutError

        for node in self.client.get_primaries():
            try:
                self.client.execute_command("SCRIPT", "LOAD", code, target_nodes=node)
            except (ConnectionError, TimeoutError):
                continue  # (down: the scripts are loaded there when it is back, on first use)

    def send(self, pipe: Any, name: str, keys: Sequence[Any], argv: Sequence[Any]) -> None:
        """Queue script ``name`` on ``pipe`` (a plain pipeline): FCALL unless it is known
        not to work (as :meth:`run`: a fresh client tries the library first), else EVALSHA;
        a refusal of either comes back as the pipeline's reply, for :meth:`recover`."""
        if self.functions is not False and name in HOT:
            pipe.fcall(library().functions[name], len(keys), *keys, *argv)
        else:
            pipe.evalsha(self.script(name).sha, len(keys), *keys, *argv)

    def run_all(self, name: str, calls: Sequence[tuple[Sequence[Any], Sequence[Any]]],
                ) -> list[Any]:
        """The replies of script ``name`` for each (keys, argv) of ``calls``, sent in one
        pipeline (a plain client: one round trip), in order; an error reply comes back as its
        exception, a lost connection is raised (:meth:`run_with`)."""
        return self.run_with(name, calls)[0]

    def run_with(self, name: str, calls: Sequence[tuple[Sequence[Any], Sequence[Any]]],
                 after: Sequence[Sequence[Any]] = ()) -> tuple[list[Any], list[Any]]:
        """(the replies of script ``name`` for each (keys, argv) of ``calls``, the replies
        of the plain commands ``after``), all sent in one pipeline, in order (durability: a
        WAIT after the write). Refused all alike because the server lacks the script or the
        library, or offers no FCALL (then none ran), what was missing is loaded (or EVALSHA
        chosen) and the pipeline sent again: at most twice more (no FCALL, then the script
        to load)."""
        for attempt in (1, 2, 3):
            pipe = self.client.pipeline(transaction=False)
            for keys, argv in calls:
                self.send(pipe, name, keys, argv)
            for command in after:
                pipe.execute_command(*command)
            replies = list(pipe.execute(raise_on_error=False))
            replies, rest = replies[:len(calls)], replies[len(calls):]
            first = replies[0] if replies else None
            if self.functions is None and name in HOT and not isinstance(first, Exception):
                self.functions = True
            if (attempt < 3 and isinstance(first, Exception)
                    and all(type(r) is type(first) for r in replies)
                    and self.recover(first, name)):
                continue
            return replies, rest
        raise AssertionError("not reached")  # pragma: no cover

    def recover(self, error: Exception, name: str) -> bool:
        """After :meth:`send` was refused with ``error``: load what was missing (the script,
        or the library) and say True, to send again; False for any other error."""
        from redis.exceptions import NoScriptError

        if isinstance(error, NoScriptError):
            self._load_script(source(name))
            return True
        refusal = _refusal(error)
        if refusal == "missing" and self.functions is not False and name in HOT:
            self._load(library().code)  # (False: EVALSHA from now on, self.functions says)
            return True
        if refusal == "unsupported" and self.functions is not False and name in HOT:
            self.functions = False  # (no Functions here: EVALSHA from now on)
            return True
        return False

    def _fcall(self, name: str, keys: Sequence[Any], argv: Sequence[Any]) -> tuple[bool, Any]:
        """(True, the reply), or (False, None) when the server has no Functions for us."""
        lib = library()
        loaded = False
        while True:
            try:
                reply = self.client.fcall(lib.functions[name], len(keys), *keys, *argv)
            except Exception as e:
                refusal = _refusal(e)
                if refusal == "missing" and not loaded:
                    if not self._load(lib.code):
                        return False, None
                    loaded = True
                    continue
                if refusal == "unsupported":
                    self.functions = False
                    return False, None
                raise  # (the script's own error reply, e.g. a key of the wrong type)
            self.functions = True
            return True, reply

    def _load(self, code: str) -> bool:
        """FUNCTION LOAD the library; False if the server will not (no Functions, an ACL
        without ``function|load``, a read-only replica): then EVALSHA it is."""
        try:
            self.client.function_load(code)
        except Exception as e:
            refusal = _refusal(e)
            if refusal == "exists":  # (another client loaded it meanwhile)
                return True
            if refusal == "":
                raise  # (a lost connection; or a library that does not compile: a bug)
            self.functions = False
            return False
        return True
