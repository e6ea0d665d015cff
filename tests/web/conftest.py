"""The web view's browser tests' chromium (Playwright driving Debian's chromium), one per
module; the modules that use it skip themselves without chromium or Playwright."""

from __future__ import annotations

import shutil

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM,
                              args=["--no-sandbox", "--headless", "--disable-gpu",
                                    "--disable-dev-shm-usage"])
        try:
            yield b
        finally:
            b.close()
