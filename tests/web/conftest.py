"""The web view's browser tests' chromium (Playwright driving Debian's chromium), one per
module; the modules that use it skip themselves without chromium or Playwright."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    from web_helpers import launch_chromium  # (here: the web extra's Starlette with it)

    with sync_api.sync_playwright() as p:
        b = launch_chromium(p)
        try:
            yield b
        finally:
            b.close()
