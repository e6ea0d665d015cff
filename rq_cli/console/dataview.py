"""An item's data as the item view shows it (re-exported by model.py)."""

from __future__ import annotations

import json
import re

from ..core.contract.util import json_too_deep
from ..output.jsonlines import data_json
from ..output.render import BIDI

#: Data shown in full up to this many bytes; beyond, the start and a note.
DATA_SHOWN = 64 * 1024
#: Control characters shown as escapes in the item view: render's set less tab and line feed,
#: which the view keeps (a multi-line text or indented JSON stays readable).
_CONTROL = re.compile(f"[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f{BIDI}]")


def data_view(data: bytes | None) -> tuple[str, str]:
    """(kind, text) to show an item's data: ``json`` (indented), ``text`` (control
    characters made visible), ``binary`` (base64) or ``no data``."""
    if data is None:
        return "no data", "(no data: an id without its data)"
    note = ""
    if len(data) > DATA_SHOWN:
        note = f"\n… {len(data) - DATA_SHOWN:,} more bytes (rq-cli peek --id shows them all)"
        data = data[:DATA_SHOWN]
    suffix, body, _ = data_json(data)
    if suffix == "_b64":
        return "binary", "base64: " + json.loads(body) + note
    text = data.decode("utf-8")
    if not note and not json_too_deep(text, 100):
        try:
            pretty = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
            return "json", _CONTROL.sub(lambda m: repr(m.group())[1:-1], pretty)
        except (ValueError, RecursionError):
            pass
    return "text", _CONTROL.sub(lambda m: repr(m.group())[1:-1], text) + note
