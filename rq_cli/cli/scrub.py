"""Secrets out of messages: every URL masked, every password we know of blanked out.

Used by the one place errors become messages (root.py) and by the commands that show an
error as a row instead of ending (stats --check and --watch, doctor).
"""

import os

from .. import config as configmod
from .common import State


def scrub(text: str, st: State | None) -> str:
    """Mask every URL in ``text`` and blank out every password we know of."""
    from ..connect import mask_urls_in, url_password

    secrets = list(st.secrets) if st else []
    urls = [os.environ.get(configmod.ENV_URL, ""), os.environ.get(configmod.ENV_REDIS_URL, "")]
    urls += [*st.urls_used, st.url or ""] if st else []
    for url in urls:
        secrets.append(url_password(url) or "" if url else "")
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, "***")
    return mask_urls_in(text)
