"""Secrets stay out of a worker's commands and out of the process list (``rq-cli work``).

- :func:`child_environ`: the environment the commands get. ``RQ_CLI_URL`` loses its
  password, and so does ``REDIS_URL`` when its password is one the worker uses; the
  variables that hold a password (a config's ``password_env``, or any variable whose value
  is a password in use) are left out; in any other value, a password in use (raw or
  percent-encoded) is masked (a URL's taken out as from ``REDIS_URL``, any other ``***``);
  all unless the user asks for them (``--pass-secrets``).
- :func:`unrunnable`: an item whose id (or queue name) holds a NUL byte, which no
  environment variable can carry, can never be run: the worker dead-letters it (settle.py,
  through ``WorkQueue.fail``, which takes the leased item itself).
- :func:`set_process_title`: ``ps`` shows the worker (and its guard) with every URL's
  password as ``***`` (through ``setproctitle``, where it is installed). The original
  arguments were visible for the few milliseconds before it runs: keeping a password out
  of argv entirely takes ``$RQ_CLI_URL`` or a config file with ``password_env``.

This module imports neither Typer nor rich.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from urllib.parse import quote

from ..connection.connect import mask_url, mask_urls_in, url_password
from ..core.types import LeasedItem

#: The variables whose value is a server URL that rq-cli reads.
URL_VARS = ("RQ_CLI_URL", "REDIS_URL")


def without_password(url: str) -> str:
    """``url`` with its password removed (the user name, host and the rest kept)."""
    masked = mask_url(url)
    masked = masked.replace(":***@", "@", 1)
    masked = re.sub(r"^([A-Za-z][A-Za-z0-9+.-]*:/*)@", r"\1", masked)
    masked = re.sub(r"[?&;][^=&;#]*=\*\*\*(?=[&;#]|$)", "", masked)
    if "?" not in masked and "&" in masked:  # the first query option went: '&' -> '?'
        masked = masked.replace("&", "?", 1)
    return masked


def child_environ(environ: Mapping[str, str], secrets: Iterable[str],
                  secret_vars: Iterable[str], pass_secrets: bool) -> dict[str, str]:
    """The environment for the worker's commands (see the module's docstring)."""
    env = dict(environ)
    if pass_secrets:
        return env
    hidden = {s for s in secrets if s}
    for name in set(secret_vars) | {k for k, v in env.items() if v in hidden}:
        env.pop(name, None)
    for name in URL_VARS:
        # (REDIS_URL may be the job's own server: only the queue's password is taken out)
        if name in env and (name == "RQ_CLI_URL" or url_password(env[name]) in hidden):
            env[name] = without_password(env[name])
    forms = sorted({f for s in hidden for f in (s, quote(s, safe=""))}, key=len, reverse=True)
    for name, value in env.items():  # a password inside another value: masked
        if any(f in value for f in forms):
            env[name] = _masked(value, hidden, forms)
    return env


def _masked(value: str, hidden: set[str], forms: list[str]) -> str:
    """``value`` with no password of ``hidden`` in it: a URL's taken out as from
    ``REDIS_URL`` (``OTHER_URL=redis://:PW@h`` -> ``redis://h``), any other ``***``."""
    if "://" in value and url_password(value) in hidden:
        value = without_password(value)
    for form in forms:  # (longest first: a password inside another is masked whole)
        value = value.replace(form, "***")
    return value


def masked_title(argv: Sequence[str]) -> str:
    """The command line with every password masked: ``rq-cli --url redis://:***@h work q``."""
    return " ".join(["rq-cli", *(mask_urls_in(mask_url(a) if "://" in a else a)
                                 for a in argv[1:])])


def set_process_title(title: str) -> bool:
    """Show ``title`` in ``ps`` and ``/proc/PID/cmdline``; False where setproctitle is not
    installed."""
    try:
        import setproctitle
    except ImportError:
        return False
    setproctitle.setproctitle(title)
    return True


def unrunnable(item: LeasedItem) -> str | None:
    """Why ``item`` can never be run (None: it can)."""
    if "\0" in item.id or "\0" in item.queue:
        return ("embedded null byte: the item id or queue name cannot be passed in the "
                "environment (RQ_ITEM_ID, RQ_QUEUE)")
    return None
