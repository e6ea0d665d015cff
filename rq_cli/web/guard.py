"""Who may ask, and who asked: the token of ``rq-cli web`` and the CSRF token of actions.

Once a token is set (``$RQ_CLI_WEB_TOKEN`` or the config's ``[web] token``) every request
carries it, loopback included: ``Authorization: Bearer TOKEN``, or as the password of HTTP
basic auth (any user name: it is who asked, in the log), so a browser can log in; without it
the answer is 401 with ``WWW-Authenticate: Basic``.

Actions are POSTs carrying a CSRF token: the HMAC, under a random secret of this process, of
the session cookie the first page set. A POST without it, or with another session's, is 403.

Every request must name one of the console's own hosts in its ``Host`` header (loopback
names, the bound address, names given with ``--allow-host``; with a wildcard bind, any
address literal): another name is how DNS rebinding reaches a console through a user's
browser, and gets 421 and no page. A POST whose ``Origin`` is another site's (or
``null``), or that a browser marks cross-site, is 403. Every answer carries a
Content-Security-Policy that lets in no script at all and only the console's own stylesheet.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import ipaddress
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

#: The cookie that names a browser's session (random, HttpOnly, SameSite=Strict).
SESSION_COOKIE = "rqcli_session"
#: The form field that carries the CSRF token.
CSRF_FIELD = "csrf"
REALM = 'Basic realm="rq-cli web", charset="UTF-8"'
#: The host names every console answers to (besides any loopback address literal).
LOOPBACK_NAMES = frozenset({"localhost"})
#: The shortest token a console listening beyond loopback takes.
MIN_TOKEN = 16
#: The form field that names a confirmation (each is done once at most).
CONFIRMATION_FIELD = "confirmation"
#: Confirmations kept open at most (the oldest go first), and for how long (seconds).
OPEN_CONFIRMATIONS = 10_000
CONFIRMATION_TTL = 3600.0


def csp() -> str:
    """The Content-Security-Policy of every answer: no script, no frames, forms only to
    this console, and only the console's own stylesheet (no inline style)."""
    return ("default-src 'none'; style-src 'self'; img-src 'self'; "
            "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")


def host_name(header: str | None) -> str | None:
    """The host of a ``Host`` header (``name:port``, ``[v6]:port``), lower case, without
    a trailing dot; None for none or one that does not read so."""
    text = (header or "").strip().lower()
    if text.startswith("["):
        name, sep, rest = text[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            return None
    else:
        name = text.rsplit(":", 1)[0] if text.count(":") == 1 else text
        if ":" in name:
            return None
    name = name.rstrip(".")
    return name or None


@dataclass
class Guard:
    """The token (None: no token, loopback only) and this process's CSRF secret."""

    token: str | None = None
    secret: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    #: the host names answered besides loopback's (the bound address, --allow-host names)
    hosts: frozenset[str] = frozenset()
    #: a wildcard bind (0.0.0.0, ::): any address literal is this machine's
    any_address: bool = False

    def host_ok(self, header: str | None) -> bool:
        """Whether a ``Host`` header names this console."""
        name = host_name(header)
        if name is None:
            return False
        if name in LOOPBACK_NAMES or name in self.hosts:
            return True
        try:
            address = ipaddress.ip_address(name)
        except ValueError:
            return False
        return address.is_loopback or self.any_address

    @staticmethod
    def origin_ok(origin: str | None, host: str | None, fetch_site: str | None) -> bool:
        """Whether a POST comes from this console's own pages: its ``Origin`` (when the
        client sends one: every browser does) is this very host, and a browser's
        ``Sec-Fetch-Site`` does not say another site sent it."""
        if fetch_site is not None and fetch_site.lower() not in ("same-origin", "none"):
            return False
        if origin is None:
            return True
        parts = urlsplit(origin.strip())
        return parts.scheme in ("http", "https") and bool(host) and \
            parts.netloc.lower() == (host or "").strip().lower()

    def user(self, authorization: str | None) -> str | None:
        """Who the ``Authorization`` header says asked, if it carries the token: the basic
        auth user name (or ``bearer``); None if it does not carry it. With no token set,
        everyone is let in (as ``""``)."""
        if self.token is None:
            return ""
        scheme, _, value = (authorization or "").partition(" ")
        value = value.strip()
        if scheme.lower() == "bearer":
            return "bearer" if _same(value, self.token) else None
        if scheme.lower() == "basic":
            try:
                user, _, password = base64.b64decode(value, validate=True).decode().partition(":")
            except (binascii.Error, UnicodeDecodeError):
                return None
            return (user or "basic") if _same(password, self.token) else None
        return None

    def csrf(self, session: str) -> str:
        """The CSRF token of a session."""
        return hmac.new(self.secret, session.encode(), hashlib.sha256).hexdigest()

    def csrf_ok(self, session: str | None, given: str | None) -> bool:
        return bool(session and given) and _same(given or "", self.csrf(session or ""))


def new_session() -> str:
    return secrets.token_urlsafe(24)


def _same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())


class Confirmations:
    """The confirmations shown and not yet done: each form is done once at most, so a
    replayed form (a reload that posts again, the back button) or one from before a restart
    does nothing. Kept in this process: at most OPEN_CONFIRMATIONS, each CONFIRMATION_TTL
    seconds."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.open: OrderedDict[str, float] = OrderedDict()
        self.lock = threading.Lock()

    def issue(self) -> str:
        """A new confirmation's name."""
        name = secrets.token_urlsafe(18)
        with self.lock:
            self.open[name] = self.clock()
            while len(self.open) > OPEN_CONFIRMATIONS:
                self.open.popitem(last=False)
        return name

    def take(self, name: str) -> bool:
        """Whether ``name`` is an open confirmation (it is closed now)."""
        with self.lock:
            at = self.open.pop(name, None)
        return at is not None and self.clock() - at <= CONFIRMATION_TTL
