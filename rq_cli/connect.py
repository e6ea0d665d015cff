"""From a URL to a Redis client; masking secrets in URLs; redis-py errors to rq-cli errors.

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

import contextlib
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from .core.keys import MIN_REDIS_VERSION, OLD_SERVER_ERROR
from .core.types import TlsOptions
from .errors import ClusterError, ConfigError, RqError, ServerError, UsageError, WrongTypeError

#: Longest single blocking call the queue makes, in seconds; reads wait this much longer.
BLOCKING_HEADROOM = 5.0
#: Seconds a pooled connection may idle before it is checked with PING on its next use.
HEALTH_CHECK_INTERVAL = 30
#: Longest TLS handshake, in seconds (at most the connect timeout). A handshake on loopback
#: takes milliseconds and across continents well under one second; a ``rediss://`` URL that
#: points at a plain server gets no answer at all, and is reported after this long.
TLS_HANDSHAKE_TIMEOUT = 2.0
DEFAULT_EMBEDDED_DIR = ".rq-cli"

CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}
SENTINEL_SCHEMES = {"redis+sentinel": False, "rediss+sentinel": True}
PLAIN_SCHEMES = ("redis", "rediss", "unix")
TLS_SCHEMES = ("rediss", "rediss+cluster", "rediss+sentinel")
_SUPPORTED = "redis://, rediss://, unix://, redis+cluster://, redis+sentinel:// or embedded:[DIR]"

# The start of a URL's userinfo: after a scheme and its slashes, however mistyped
# ("redis://", "redis//", "redis:/"). "redis:pw@host" has none: its "redis:" reads as "user:".
# (Patterns are compiled by re on first use, through its cache: most runs need none.)
_SCHEME_PREFIX = r"[A-Za-z][A-Za-z0-9+.-]*:?/+"
# URL-ish words in a message: a scheme (possibly mistyped) and slashes, then anything.
_URL_IN_TEXT = r"[A-Za-z][A-Za-z0-9+.-]*:?/+\S+"
# Characters that end a URL's userinfo early when a password holds them unescaped.
_URL_DELIMITERS = r"[/?#\[\]@]"
PERCENT_ENCODE_HINT = ("a password holding / ? # [ or ] must be written percent-encoded: "
                       "%2F %3F %23 %5B %5D")
# "?password=..." and friends in a query string (password, sentinel_password, ...).
_SECRET_QUERY = (r"(?i)(?P<key>[?&;](?:[^=&;#]*(?:pass|secret|token|credential)[^=&;#]*)=)"
                 r"(?P<value>[^&;#]*)")


def _password_span(url: str) -> tuple[int, int] | None:
    """Where the userinfo password of ``url`` is (start, end), or None if it has none.

    Deliberately loose, because it guards error messages about URLs that do not parse:
    the password runs from the first ":" after the scheme to the *last* "@", so one with an
    unescaped "@", "/" or "?" is still hidden whole, and so is the password of a mistyped
    URL (``redis//:pw@host``, ``redis:/:pw@host``, ``redis:pw@host``, ``user:pw@host``).
    The price: an "@" in the query of a URL without a password (``redis://h:1/0?x=a@b``)
    hides more than it needs to.
    """
    at = url.rfind("@")
    if at < 0 or scheme_of(url) == "embedded":  # embedded:DIR has no userinfo
        return None
    prefix = re.match(_SCHEME_PREFIX, url)
    colon = url.find(":", prefix.end() if prefix else 0, at)
    return None if colon < 0 else (colon + 1, at)


def mask_url(url: str) -> str:
    """``url`` with every password replaced by ``***`` (userinfo and query string).

    >>> mask_url("redis://user:hunter2@host:6379/0?password=x")
    'redis://user:***@host:6379/0?password=***'
    >>> mask_url("redis//:hunter2@host")
    'redis//:***@host'
    """
    span = _password_span(url)
    if span:
        url = url[: span[0]] + "***" + url[span[1] :]
    return re.sub(_SECRET_QUERY, lambda m: f"{m['key']}***", url)


def _misread_password_parts(url: str) -> list[str]:
    """Pieces of the password that a URL parser may have read as host, port or path.

    When ``url``'s password holds an unescaped delimiter (``redis://:pa/ss@host``),
    urlsplit and redis-py read another password (``pa``) and show the rest in their errors
    (``Port could not be cast to integer value as 'pa'``, ``connecting to /ss@host``),
    where masking the whole password cannot find it. Empty when parsers read the
    password that :func:`mask_url` hides.
    """
    span = _password_span(url)
    if span is None:
        return []
    password = url[span[0] : span[1]]
    try:
        parsed = urlsplit(url).password
    except ValueError:
        parsed = None
    if parsed == password:
        return []
    parts = [part for part in re.split(_URL_DELIMITERS, password) if part]
    return parts + [unquote(part) for part in parts]


def safe_detail(detail: str, url: str) -> str:
    """``detail`` (about ``url``), or a hint instead if it may show part of a password."""
    if any(part in detail for part in _misread_password_parts(url)):
        return f"it does not parse as meant: {PERCENT_ENCODE_HINT}"
    return detail


def mask_urls_in(text: str) -> str:
    """``text`` (a message) with every password of the URLs in it masked."""
    return re.sub(_URL_IN_TEXT, lambda m: mask_url(m.group(0)), text)


def url_password(url: str) -> str | None:
    """The password a URL carries (userinfo or ``?password=``), decoded; None if none.

    This is what :func:`mask_url` hides, so that a password with an unescaped "@" or "/",
    or one in a mistyped URL, can be scrubbed from messages whole.
    """
    span = _password_span(url)
    if span and span[1] > span[0]:
        return unquote(url[span[0] : span[1]])
    for key, value in parse_qsl(url.partition("?")[2]):
        if key == "password" and value:
            return value
    return None


def scheme_of(url: str) -> str:
    """The URL's scheme in lower case (``embedded`` for ``embedded:DIR``); '' if none."""
    head, sep, _ = url.partition(":")
    return head.lower() if sep and re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*", head) else ""


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
        raise UsageError(f"cannot use server URL {mask_url(url)!r}: the path must be a "
                         f"database number, as in redis://host:6379/0, not "
                         f"{safe_detail(repr(path), url)}")


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


# --- errors --------------------------------------------------------------------------------

_AUTH_CLASSES = frozenset(
    {"AuthenticationError", "AuthenticationWrongNumberOfArgsError", "AuthorizationError"}
)
_AUTH_REPLIES = ("NOAUTH", "WRONGPASS", "INVALIDPASSWORD")


@contextlib.contextmanager
def server_errors(url: str, *, password: str | None = None) -> Iterator[None]:
    """Translate redis-py exceptions raised inside into rq-cli errors naming the masked URL.

    Usable as ``with server_errors(url):`` or as a decorator ``@server_errors(url)``.
    ``password`` (if the caller knows it) is also scrubbed from messages. rq-cli's own
    errors and exceptions that are not redis-py's pass through unchanged.
    """
    try:
        yield
    except RqError:
        raise
    except Exception as err:
        translated = translate_error(err, url, password=password)
        if translated is None:
            raise
        raise translated from err


def translate_error(err: BaseException, url: str, *, password: str | None = None,
                    read_only: bool = False) -> RqError | None:
    """The rq-cli error for a redis-py exception ``err`` (None if it is not redis-py's).

    ``read_only``: the command changes nothing (stats, peek, ...), so a connection lost or
    a read timed out mid-command says that nothing changed, not "outcome unknown"."""
    names = {cls.__name__ for cls in type(err).__mro__}
    if "RedisError" not in names and "RedisClusterException" not in names:
        return None
    where = mask_url(url)
    detail = _scrub(str(err), url, password)
    code = detail.split(" ", 1)[0]
    if (
        names & _AUTH_CLASSES
        or code in _AUTH_REPLIES
        or "invalid username-password" in detail.lower()
    ):
        return ServerError(f"authentication failed for {where}")
    if "NoPermissionError" in names or code == "NOPERM" or "NOPERM" in detail or \
            "user executing the script can't run" in detail:  # (Redis 6.2, in a script)
        return ServerError(
            f"permission denied for {where}: the server's ACL does not allow this "
            f"({_one_line(detail)})"
        )
    named = re.search(r"WRONGTYPE key (.+?) holds an? (\w+), not an? (\w+)", detail)
    if named:  # a script's own check names the key
        key, got, want = named.groups()
        return WrongTypeError(
            f"key {key!r} on {where} holds a {got}, not a {want} (WRONGTYPE): the prefix is "
            "used by something else; choose another prefix, or inspect and remove that key")
    if "WRONGTYPE" in detail:
        return WrongTypeError(
            f"a key of this queue on {where} holds another type of value (WRONGTYPE): "
            "the prefix is used by something else; choose another prefix, or inspect and "
            "remove the conflicting key"
        )
    if "CROSSSLOT" in detail or "ClusterCrossSlotError" in names:
        return ClusterError(
            f"keys of one queue map to different cluster slots on {where}: give the prefix a "
            "hash tag, for example {emails} or myapp:{emails}"
        )
    if "MasterNotFoundError" in names:  # (a ConnectionError: checked first)
        return ServerError(f"cannot connect to {where}: {_no_master(detail)}")
    if names & {"ConnectionError", "TimeoutError"}:
        reason = _tls_reason(detail, url, timed_out="TimeoutError" in names)
        if reason is None and _cut_off(detail) and read_only:
            what = ("the read timed out" if "TimeoutError" in names
                    else "the connection was lost")
            return ServerError(f"{what} waiting for {where} to answer (a hung or overloaded "
                               f"server?); this command only reads, so nothing was changed: "
                               f"{_one_line(detail)}")
        if reason is None and _cut_off(detail):
            return ServerError(f"lost the connection to {where} during the command, so its "
                               f"outcome is unknown (the server may have done it): "
                               f"{_one_line(detail)}")
        return ServerError(f"cannot connect to {where}: "
                           f"{reason or _one_line(detail) or type(err).__name__}")
    if "ReadOnlyError" in names:
        return ServerError(f"server {where} is read-only (a replica?): {_one_line(detail)}")
    if "ResponseError" in names and _too_old(detail):
        return ServerError(f"server {where} is too old: rq-cli needs Redis >= {MIN_REDIS_VERSION} "
                           f"or Valkey ({_one_line(detail)[:120]})")
    if "ResponseError" in names:
        return ServerError(f"server error from {where}: {_one_line(detail)}")
    return ServerError(f"Redis error with {where}: {_one_line(detail) or type(err).__name__}")


# What a server older than Redis 6.2 answers: the prelude's refusal (before Redis 6), a
# command a script uses that it lacks (ZMSCORE) or lacks the form of (RPOP key count), or
# redis-py's HELLO on connect (RESP3, before Redis 6).
_TOO_OLD = (OLD_SERVER_ERROR, "Unknown Redis command called from Lua script",
            "Wrong number of args calling Redis command From Lua script",
            "unknown command `HELLO`", "unknown command 'HELLO'")


#: How redis-py words a connection that broke after the command was sent, while reading
#: the reply, as opposed to one that could not be made (or a command that could not be
#: written whole, which the server cannot have run).
_CUT_OFF = ("Connection closed by server", "Error while reading from", "Timeout reading from")


def _cut_off(detail: str) -> bool:
    # (a TLS failure surfaces on the first read or write, e.g. the server's alert that it
    # wants a client certificate: the connection never worked, so it is "cannot connect")
    if "SSL" in detail or "_ssl.c" in detail:
        return False
    return any(marker in detail for marker in _CUT_OFF)


def _too_old(detail: str) -> bool:
    return any(marker in detail for marker in _TOO_OLD)


def _tls_reason(detail: str, url: str, *, timed_out: bool) -> str | None:
    """A TLS failure in words that say what to fix; None for other connection errors."""
    if scheme_of(url) not in TLS_SCHEMES:
        if "Connection reset by peer" in detail:
            return (f"{_one_line(detail)} (if the server only speaks TLS, "
                    "write rediss:// instead of redis://)")
        return None
    verify = re.search(r"certificate verify failed: ([^(]+)", detail)
    if verify:
        return (f"TLS certificate verification failed: {verify.group(1).strip()} (set "
                "tls_ca_file to the CA that signed the server's certificate)")
    if timed_out:
        return (f"no TLS handshake within {TLS_HANDSHAKE_TIMEOUT:g} s: does the server speak "
                "TLS? (a plain server needs redis://)")
    ssl_error = re.search(r"\[SSL: ([A-Z_]+)\][^(]*", detail)
    if ssl_error:
        return f"TLS handshake failed: {_one_line(ssl_error.group(0))}"
    return None


def _no_master(detail: str) -> str:
    """redis-py's MasterNotFoundError in one line (its message holds each sentinel's repr).

    ``No master found for 'svc' : <repr ... host=h,port=p ...> - <error>, ...`` names the
    sentinels that could not be reached; with none named, every sentinel answered and none
    knows a healthy master of that name.
    """
    service = re.match(r"No master found for (.+?)(?: : |$)", detail)
    name = service.group(1) if service else "the service"
    unreachable = dict.fromkeys(re.findall(r"[(,]host=([^,()]+),port=(\d+)", detail))
    if unreachable:
        sentinels = ", ".join(f"{host}:{port}" for host, port in unreachable)
        return f"no master found for {name}: cannot reach sentinel {sentinels}"
    return f"no master found for {name}: no sentinel knows a healthy master of that name"


def _scrub(text: str, url: str, password: str | None) -> str:
    """``text`` with passwords (explicit, or the URL's) and any URLs in it masked."""
    for secret in (password, url_password(url)):
        if secret:
            text = text.replace(secret, "***")
    return safe_detail(mask_urls_in(text), url)


def _one_line(text: str) -> str:
    return " ".join(text.split())
