"""The error normaliser: an error text's pattern and its group's key (docs in
:mod:`rq_cli.core.errgroups`, which groups items by them; :mod:`.filtering` tests
``--error-group`` with them). Pure functions; imports nothing of rq_cli but the errors.
"""

from __future__ import annotations

import functools
import hashlib
import re

from ...errors import ParameterError
from .limits import MAX_ERROR_CHARS

#: Hex digits of a group's key.
KEY_LEN = 12
_KEY_RE = re.compile(rf"[0-9a-f]{{{KEY_LEN}}}")

_UNIT = r"(?:ns|us|µs|ms|seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d)"
# One pass over the text: the first alternative that matches at a position wins, so the
# order is from the most specific to the least. ``keep`` holds a number that names a cause.
_RULES: tuple[tuple[str, str], ...] = (
    ("keep", r"\b(?:HTTP|status|code|errno|exit|signal|SIG[A-Z]+)\b[ :=/#]*(?:code[ :=]*)?\d+"),
    ("time", r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?(?:Z|[+-]\d\d:?\d\d)?"
             r"|\b\d\d?:\d\d:\d\d(?:[.,]\d+)?\b"),
    ("uuid", r"\b[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?"
             r"[0-9a-fA-F]{12}\b"),
    ("addr", r"\[[0-9a-fA-F:.]*:[0-9a-fA-F:.]*\](?::\d{1,5})?"  # [ipv6]:port
             r"|\b(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?\b"  # ipv4[:port]
             r"|(?<![\w:])(?=[0-9a-fA-F:]*::)(?:[0-9a-fA-F]{0,4}:){2,7}[0-9a-fA-F]{0,4}"
             r"(?![\w:])|\b(?:[0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}\b"  # ipv6
             r"|\b(?:localhost|[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+):\d{1,5}\b"  # host.name:port
             r"|\b[A-Za-z][A-Za-z0-9-]*:\d{2,5}\b"),  # host:port
    # 8 or more hex digits, a letter among them or not: an id of 8 hex digits that happens
    # to be all digits (00019223 beside 00024bbd) is the same kind of token
    ("hex", r"\b0x[0-9a-fA-F]+\b|\b(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{8,}\b"),
    # a long token of letters and digits (a ULID, a nanoid, a Stripe-like ch_3Mml..., a pod
    # name): 16 or more word characters or hyphens, two digits and a letter among them
    ("id", r"(?<![\w-])(?=[\w-]*\d[\w-]*\d)(?=[\w-]*[A-Za-z])[\w-]{16,}(?![\w-])"),
    ("duration", rf"(?<![\w.])(?:\d+(?:\.\d+)?\s?{_UNIT})+\b"),
    ("n", r"(?<![A-Za-z0-9.])-?\d+(?:\.\d+)?"),
)
_PATTERN = re.compile("|".join(f"(?P<{name}>{rx})" for name, rx in _RULES))
_SPACE = re.compile(r"\s+")


def _placeholder(m: re.Match[str]) -> str:
    kind = m.lastgroup or "n"
    return m.group(0) if kind == "keep" else f"<{kind}>"


@functools.lru_cache(maxsize=4096)  # (an outage repeats one text: made once)
def normalise(error: str | None) -> str:
    """The pattern of an error text: placeholders (``<uuid>``, ``<addr>``, ``<hex>``,
    ``<id>``, ``<time>``, ``<duration>``, ``<n>``) for what varies, runs of white space as
    one space.
    ``None`` (an item dead without an error: expired, cancelled without a message) is ``""``.
    """
    if not error:
        return ""
    return _SPACE.sub(" ", _PATTERN.sub(_placeholder, error[:MAX_ERROR_CHARS])).strip()


def group_key(error: str | None, pattern: str | None = None) -> str:
    """The key of the group of an error text: the first KEY_LEN hex digits of the SHA-1 of
    its pattern (``pattern``: already made)."""
    pattern = normalise(error) if pattern is None else pattern
    digest = hashlib.sha1(pattern.encode("utf-8"), usedforsecurity=False)
    return digest.hexdigest()[:KEY_LEN]


def check_group_key(key: str) -> str:
    """``key`` if it reads as a group key (KEY_LEN lowercase hex digits), else ParameterError
    (exit 2, before anything is read)."""
    if not _KEY_RE.fullmatch(key):
        raise ParameterError("error_group", f"{key!r} is not an error group key ({KEY_LEN} hex "
                                            "digits, as `rq-cli errors QUEUE` prints them)")
    return key
