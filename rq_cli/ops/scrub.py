"""Secrets out of messages: every URL masked, every password we know of blanked out.

Used by the one place errors become messages (rq_cli/cli/root.py), by the commands that show
an error as a row instead of ending (stats --check and --watch, doctor) and by the console.
"""

from __future__ import annotations

import os
from typing import Protocol

from ..core.contract.env import ENV_REDIS_URL, ENV_URL


class Secrets(Protocol):
    """What a run knows of secrets: the passwords it read, the servers it talked to and the
    URL it was given (the CLI's per-invocation state is one)."""

    secrets: list[str]
    urls_used: list[str]
    url: str | None


def scrub(text: str, st: Secrets | None) -> str:
    """Mask every URL in ``text`` and blank out every password we know of."""
    from ..connection.connect import mask_urls_in, url_password

    secrets = list(st.secrets) if st else []
    urls = [os.environ.get(ENV_URL, ""), os.environ.get(ENV_REDIS_URL, "")]
    urls += [*st.urls_used, st.url or ""] if st else []
    for url in urls:
        secrets.append(url_password(url) or "" if url else "")
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, "***")
    return mask_urls_in(text)
