"""From a URL to a Redis client. (Masking URLs: :mod:`rq_cli.connection.urls`; redis-py errors
as rq-cli errors: :mod:`rq_cli.connection.server_errors`.)

A library module: no Typer or rich, and redis-py is imported only inside the functions that
need it, so ``rq-cli --help`` never loads it.

URL forms accepted by :func:`connect`:

=====================================================  =====================================
``redis://[[user]:password@]host[:port][/db]``         TCP (redis-py's own URL syntax and
``rediss://...``                                       query options, e.g. ``?ssl_cert_reqs=none``)
``unix://[[user]:password@]/path/to.sock[?db=N]``      unix socket
``redis+cluster://[[user]:password@]host:port``        Redis Cluster (``rediss+cluster://`` for
                                                       TLS): a ``redis.RedisCluster``, any node
                                                       as the seed
``redis+sentinel://[[user]:password@]host:port[,host:port...]/service[/db]``
                                                       Sentinel: the current master of
                                                       ``service``; the password is the master's,
                                                       ``?sentinel_password=`` the sentinels'
``embedded:`` or ``embedded:DIR``                      the embedded server of ``DIR``
                                                       (default ``.rq-cli``, see embedded.py)
=====================================================  =====================================

Timeouts: connecting gives up after ``timeout`` seconds (default 5). Reads wait up to
``timeout + BLOCKING_HEADROOM`` seconds, because the queue blocks on the server in chunks of at
most :data:`BLOCKING_HEADROOM` seconds (``BLMOVE ... timeout``), and a blocking call must
return before the socket gives up on it. Idle pooled connections are PINGed before reuse
after :data:`HEALTH_CHECK_INTERVAL` seconds, so a restarted server is noticed before a
command is sent. A command is never retried (:func:`_retry_policy`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from ..core.types import TlsOptions
from ..errors import ConfigError, UsageError
from .server_errors import TLS_HANDSHAKE_TIMEOUT as TLS_HANDSHAKE_TIMEOUT
from .server_errors import server_errors as server_errors
from .server_errors import translate_error as translate_error
from .urls import PERCENT_ENCODE_HINT as PERCENT_ENCODE_HINT
from .urls import TLS_SCHEMES as TLS_SCHEMES
from .urls import mask_url as mask_url
from .urls import mask_urls_in as mask_urls_in
from .urls import safe_detail as safe_detail
from .urls import scheme_of as scheme_of
from .urls import url_password as url_password

#: Longest single blocking call the queue makes, in seconds; reads wait this much longer.
BLOCKING_HEADROOM = 5.0
#: Seconds a pooled connection may idle before it is checked with PING on its next use.
HEALTH_CHECK_INTERVAL = 30
DEFAULT_EMBEDDED_DIR = ".rq-cli"

CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}
SENTINEL_SCHEMES = {"redis+sentinel": False, "rediss+sentinel": True}
PLAIN_SCHEMES = ("redis", "rediss", "unix")
_SUPPORTED = "redis://, rediss://, unix://, redis+cluster://, redis+sentinel:// or embedded:[DIR]"

def connect(url: str, *, password: str | None = None, timeout: float = 5.0,
            tls: TlsOptions | None = None,
            on_new_embedded: Callable[[Path], None] | None = None) -> Any:
    """A redis-py client for ``url`` (bytes responses); see the module docstring for the forms.

    ``password`` overrides a password in the URL (it comes from ``password_env``, so it
    stays out of config files). ``tls`` (the config's ``tls_*`` keys) needs a ``rediss``
    URL; :func:`tls_unverified` tells whether the caller should warn. Returns a
    ``redis.Redis``, or a ``redis.RedisCluster`` for ``redis+cluster://``. No command is
    sent except for a cluster, whose topology is read at once; call within
    :func:`server_errors` to get rq-cli errors for every failure.
    ``on_new_embedded(dir)``: called when ``embedded:`` creates its data directory (a new,
    empty server). Raises :class:`~rq_cli.errors.UsageError` for a URL it cannot read.
    """
    scheme = scheme_of(url)
    extra = tls_options(url, tls)
    if scheme == "embedded":
        return _connect_embedded(url, password=password, timeout=timeout,
                                 on_new=on_new_embedded)
    if scheme in CLUSTER_SCHEMES:
        return _connect_cluster(url, password=password, timeout=timeout, extra=extra)
    if scheme in SENTINEL_SCHEMES:
        return _connect_sentinel(url, password=password, timeout=timeout, extra=extra)
    if scheme in PLAIN_SCHEMES:
        return _connect_plain(url, password=password, timeout=timeout, extra=extra)
    raise UsageError(f"cannot use server URL {mask_url(url)!r}: it must start with {_SUPPORTED}")


def tls_options(url: str, tls: TlsOptions | None) -> dict[str, Any]:
    """redis-py's ``ssl_*`` options for ``tls``; ``{}`` when it sets nothing.

    Raises :class:`~rq_cli.errors.ConfigError` when TLS options are set for a URL that does
    not use TLS, or name a file that does not exist.
    """
    if not tls:
        return {}
    if scheme_of(url) not in TLS_SCHEMES:
        raise ConfigError(f"tls_* options are set for {mask_url(url)}, which does not use TLS: "
                          "write rediss:// (or rediss+cluster://, rediss+sentinel://)")
    options: dict[str, Any] = {}
    for key, option, path in (("tls_ca_file", "ssl_ca_certs", tls.ca_file),
                              ("tls_cert_file", "ssl_certfile", tls.cert_file),
                              ("tls_key_file", "ssl_keyfile", tls.key_file)):
        if path:
            if not os.path.isfile(path):
                raise ConfigError(f"{key} = {path!r}: no such file")
            options[option] = path
    if tls.insecure:
        options.update(ssl_cert_reqs="none", ssl_check_hostname=False)
    return options


def tls_unverified(url: str, tls: TlsOptions | None = None) -> bool:
    """True when a TLS connection to ``url`` will not verify the server's certificate
    (``tls_insecure = true``, or ``?ssl_cert_reqs=none`` in the URL)."""
    if scheme_of(url) not in TLS_SCHEMES:
        return False
    query = dict(parse_qsl(url.partition("?")[2]))
    return bool(tls and tls.insecure) or query.get("ssl_cert_reqs", "").lower() in (
        "none", "cert_none")


def _tls_connection_class() -> Any:
    """redis-py's SSLConnection, whose TLS handshake gives up after
    :data:`TLS_HANDSHAKE_TIMEOUT` (at most the connect timeout) instead of the read timeout,
    so a ``rediss://`` URL of a plain server fails in seconds, not ``timeout + 5``."""
    from redis.connection import SSLConnection

    class QuickHandshakeSSLConnection(SSLConnection):
        def _connect(self) -> Any:
            read_timeout = self.socket_timeout
            self.socket_timeout = min(TLS_HANDSHAKE_TIMEOUT,
                                      self.socket_connect_timeout or TLS_HANDSHAKE_TIMEOUT)
            try:
                sock = super()._connect()  # type: ignore[no-untyped-call,unused-ignore]
            finally:
                self.socket_timeout = read_timeout
            sock.settimeout(read_timeout)
            return sock

    return QuickHandshakeSSLConnection


def client_options(timeout: float) -> dict[str, Any]:
    """The connection options every client gets (URL query options may override them)."""
    return {
        "decode_responses": False,
        "socket_connect_timeout": timeout,
        "socket_timeout": timeout + BLOCKING_HEADROOM,
        "health_check_interval": HEALTH_CHECK_INTERVAL,
        "retry": _retry_policy(),
        **_no_client_setinfo(),
    }


def _no_client_setinfo() -> dict[str, Any]:
    """Options that skip redis-py's CLIENT SETINFO on connect: two round trips saved on
    every command-line run (start-up time is a budget of its own)."""
    from importlib.util import find_spec

    if find_spec("redis.driver_info") is not None:  # redis-py with DriverInfo
        return {"driver_info": None}
    return {"lib_name": None, "lib_version": None}


def _retry_policy() -> Any:
    """Never retry a command.

    redis-py 6+ retries three times with seconds of backoff by default, which makes an
    unreachable server slow to report; worse, a retry of a command whose reply was lost
    runs a non-idempotent script twice, and the second answer ("missing", "duplicate")
    replaces the true one. A broken connection is reported instead (exit 69: the outcome
    is unknown); idle pooled connections are health-checked before use.
    """
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    return Retry(NoBackoff(), 0)


def _with_password(url: str, password: str | None) -> tuple[str, dict[str, Any]]:
    """(URL, extra options) so that an explicit ``password`` wins over one in the URL.

    redis-py lets URL values override keyword arguments, so the URL's own password is
    removed (the user name is kept) before the explicit one is passed.
    """
    if password is None:
        return url, {}
    parts = urlsplit(url)
    userinfo, at, hostport = parts.netloc.rpartition("@")
    if at:
        user = userinfo.partition(":")[0]
        parts = parts._replace(netloc=f"{user}@{hostport}" if user else hostport)
    if parts.query:
        query = parse_qsl(parts.query, keep_blank_values=True)
        parts = parts._replace(query=urlencode([(k, v) for k, v in query if k != "password"]))
    return urlunsplit(parts), {"password": password}


def _connect_plain(url: str, *, password: str | None, timeout: float,
                   extra: dict[str, Any]) -> Any:
    import redis

    url, pw = _with_password(url, password)
    _check_db_path(url)
    if scheme_of(url) == "rediss":
        extra = {"connection_class": _tls_connection_class(), **extra}
    try:
        client = redis.Redis.from_url(url, **client_options(timeout), **pw, **extra)
        pool = client.connection_pool
        # redis-py passes unknown query options on to the connection class, which is made
        # at the first command: make one now (no socket yet) so a typo is a usage error.
        pool.connection_class(**pool.connection_kwargs)
    except ValueError as err:
        raise UsageError(f"cannot use server URL {mask_url(url)!r}: "
                         f"{safe_detail(str(err), url)}") from None
    except TypeError as err:
        option = re.search(r"keyword argument '([^']*)'", str(err))
        raise UsageError(f"cannot use server URL {mask_url(url)!r}: unknown option "
                         f"{option.group(1) if option else str(err)!r} in its query string")\
            from None
    return client


def _check_db_path(url: str) -> None:
    """Refuse a ``redis://host/PATH`` whose PATH is not a database number (redis-py reads
    ``/abc`` as database 0 without a word)."""
    if scheme_of(url) == "unix":
        return
    try:
        path = urlsplit(url).path
    except ValueError:
        return  # redis-py's own parse reports it
    db = path.strip("/")
    if db and not db.isdigit():
        hint = safe_detail(repr(path), url)  # (the path may be a password's misread part)
        raise UsageError(f"cannot use server URL {mask_url(url)!r}: " + (
            hint if hint != repr(path) else "the path must be a database number, as in "
            f"redis://host:6379/0, not {path!r}"))


def _connect_cluster(url: str, *, password: str | None, timeout: float,
                     extra: dict[str, Any]) -> Any:
    from redis.cluster import RedisCluster

    scheme = scheme_of(url)
    url = CLUSTER_SCHEMES[scheme] + url[len(scheme) :]
    url, pw = _with_password(url, password)
    extra = {**extra, **pw}
    options = client_options(timeout)
    # RedisCluster has its own retry loop around MOVED/ASK/connection errors.
    options.pop("retry")
    try:
        with server_errors(url):
            return RedisCluster.from_url(url, **options, **extra)
    except ValueError as err:
        raise UsageError(f"cannot use server URL {mask_url(url)!r}: "
                         f"{safe_detail(str(err), url)}") from None


def _parse_sentinel(url: str) -> tuple[list[tuple[str, int]], str, int, dict[str, Any]]:
    """(sentinel addresses, service name, db, options) from a ``redis+sentinel://`` URL."""
    usage = (
        f"cannot use sentinel URL {mask_url(url)!r}: "
        "write redis+sentinel://[[user]:password@]host:port[,host:port...]/service_name[/db]"
    )
    parts = urlsplit(url)
    userinfo, at, hosts = parts.netloc.rpartition("@")
    options: dict[str, Any] = {}
    if at:
        user, colon, pw = userinfo.partition(":")
        if user:
            options["username"] = unquote(user)
        if colon:
            options["password"] = unquote(pw)
    segments = [s for s in parts.path.split("/") if s]
    if not hosts or not segments or len(segments) > 2:
        raise UsageError(usage)
    addresses: list[tuple[str, int]] = []
    for host in hosts.split(","):
        name, colon, port = host.rpartition(":")
        if not colon:
            name, port = host, "26379"
        if not name or not port.isdigit():
            raise UsageError(f"{usage} ({safe_detail(f'bad address {host!r}', url)})")
        addresses.append((name.strip("[]"), int(port)))
    db = segments[1] if len(segments) == 2 else "0"
    if not db.isdigit():
        raise UsageError(f"{usage} ({safe_detail(f'bad database {db!r}', url)})")
    for key, value in parse_qsl(parts.query):
        if key in ("sentinel_password", "password"):
            options[key] = value
    return addresses, unquote(segments[0]), int(db), options


def _connect_sentinel(url: str, *, password: str | None, timeout: float,
                      extra: dict[str, Any]) -> Any:
    from redis.sentinel import Sentinel

    addresses, service, db, parsed = _parse_sentinel(url)
    if password is not None:
        parsed["password"] = password
    options = client_options(timeout)
    if SENTINEL_SCHEMES[scheme_of(url)]:
        options["ssl"] = True
        options.update(extra)
    sentinel_options: dict[str, Any] = {
        "socket_connect_timeout": timeout,
        "socket_timeout": timeout,
        "ssl": options.get("ssl", False),
        **(extra if options.get("ssl") else {}),
    }
    if "sentinel_password" in parsed:
        sentinel_options["password"] = parsed.pop("sentinel_password")
    sentinel = Sentinel(addresses, sentinel_kwargs=sentinel_options, **options)  # type: ignore[no-untyped-call,unused-ignore]
    return sentinel.master_for(service, db=db, **options, **parsed)  # type: ignore[no-untyped-call,unused-ignore]


def _connect_embedded(url: str, *, password: str | None, timeout: float,
                      on_new: Callable[[Path], None] | None = None) -> Any:
    import redis

    from . import embedded

    directory = url.partition(":")[2] or DEFAULT_EMBEDDED_DIR
    socket_path = embedded.ensure_running(directory, on_new=on_new)
    options = client_options(timeout)
    if password is not None:
        options["password"] = password
    return redis.Redis(unix_socket_path=str(socket_path), **options)
