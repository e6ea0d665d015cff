"""URLs: their schemes, their passwords, and masking the passwords wherever a URL is shown.

No Typer, no rich, no redis-py."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, unquote, urlsplit

#: Longest single blocking call the queue makes, in seconds; reads wait this much longer.

TLS_SCHEMES = ("rediss", "rediss+cluster", "rediss+sentinel")

# The start of a URL's userinfo: after a scheme and its slashes, however mistyped
# ("redis://", "redis//", "redis:/"). "redis:pw@host" has none: its "redis:" reads as "user:".
# (Patterns are compiled by re on first use, through its cache: most runs need none.)
_SCHEME_PREFIX = r"[A-Za-z][A-Za-z0-9+.-]*:?/+"
# URL-ish words in a message: a scheme (possibly mistyped) and slashes, then anything.
# Linear in the text, however long a word: a match is tried only at the start of a run of
# scheme characters (the lookbehind), and each run is read once: ``(?=(X*))\1`` takes X* whole
# and never gives any back (a lookahead is atomic; Python before 3.11 has no ``*+``). The plain
# ``[A-Za-z][A-Za-z0-9+.-]*:?/+\S+`` read the rest of a word from each of its letters: a
# 20,000-letter word took 5.8 s, 100,000 did not end. Group ``url``: from the run's first
# letter (the digits and signs before it are no part of the scheme).
_URL_IN_TEXT = (r"(?<![A-Za-z0-9+.-])(?=([0-9+.-]*))\1"
                r"(?P<url>(?=([A-Za-z][A-Za-z0-9+.-]*))\3:?/+\S+)")
# Characters that end a URL's userinfo early when a password holds them unescaped.
_URL_DELIMITERS = r"[/?#\[\]@]"
PERCENT_ENCODE_HINT = ("a password holding / ? # [ or ] must be written percent-encoded: "
                       "%2F %3F %23 %5B %5D")
# "?password=..." and friends in a query string (password, sentinel_password, ...): a name
# (after ? & or ;, up to "=") holding one of _SECRET_WORDS has its value (up to & ; or #)
# masked. Linear: each name is read once, to the next delimiter (a "?" ends one too), and
# tested for the words apart; its value is read only when it is masked. (One pattern with
# the words inside the name backtracked over every split of it: cubic in a long name.)
_QUERY_NAME = r"[?&;](?=([^=&;#?]*))\1="
_SECRET_WORDS = ("pass", "secret", "token", "credential")
_VALUE_END = r"[&;#]"


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
    return _mask_query_secrets(url)


def _mask_query_secrets(url: str) -> str:
    """``url`` with the value of each secret query parameter (:data:`_QUERY_NAME`) masked;
    a name found inside a value already masked is part of that value."""
    parts, at = [], 0
    for m in re.finditer(_QUERY_NAME, url):
        name = m.group(1).lower()
        if m.start() < at or not any(word in name for word in _SECRET_WORDS):
            continue
        end = re.compile(_VALUE_END).search(url, m.end())
        parts += [url[at:m.end()], "***"]
        at = end.start() if end else len(url)
    return "".join(parts) + url[at:] if parts else url


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
    return re.sub(_URL_IN_TEXT, lambda m: m.group(1) + mask_url(m["url"]), text)


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
