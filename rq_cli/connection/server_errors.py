"""redis-py's exceptions as rq-cli errors: one line naming the masked URL, and an exit code.

redis-py is imported only inside the functions that need it."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

from ..core.contract.keys import MIN_REDIS_VERSION, OLD_SERVER_ERROR
from ..errors import ClusterError, RqError, ServerError, WrongTypeError
from .urls import TLS_SCHEMES, mask_url, mask_urls_in, safe_detail, scheme_of, url_password

#: Longest TLS handshake, in seconds (at most the connect timeout). A handshake on loopback
#: takes milliseconds and across continents well under one second; a ``rediss://`` URL that
#: points at a plain server gets no answer at all, and is reported after this long.
TLS_HANDSHAKE_TIMEOUT = 2.0

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
            what, why = (("the read timed out", "a hung or overloaded server?")
                         if "TimeoutError" in names else
                         ("the connection was lost", "the server stopped, or the network "
                                                     "dropped it?"))
            return ServerError(f"{what} waiting for {where} to answer ({why}); this command "
                               f"only reads, so nothing was changed: {_one_line(detail)}")
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
