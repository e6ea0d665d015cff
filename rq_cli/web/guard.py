"""Who may ask, and who asked: the token of ``rq-cli web`` and the CSRF token of actions.

Once a token is set (``$RQ_CLI_WEB_TOKEN`` or the config's ``[web] token``) every request
carries it, loopback included: ``Authorization: Bearer TOKEN``, or as the password of HTTP
basic auth (any user name: it is who asked, in the log), so a browser can log in; without it
the answer is 401 with ``WWW-Authenticate: Basic``.

Actions are POSTs carrying a CSRF token: the HMAC, under a random secret of this process, of
the session cookie the first page set. A POST without it, or with another session's, is 403.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from dataclasses import dataclass, field

#: The cookie that names a browser's session (random, HttpOnly, SameSite=Strict).
SESSION_COOKIE = "rqcli_session"
#: The form field that carries the CSRF token.
CSRF_FIELD = "csrf"
REALM = 'Basic realm="rq-cli web", charset="UTF-8"'


@dataclass
class Guard:
    """The token (None: no token, loopback only) and this process's CSRF secret."""

    token: str | None = None
    secret: bytes = field(default_factory=lambda: secrets.token_bytes(32))

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
