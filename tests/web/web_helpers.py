"""Driving ``rq-cli web`` in tests: the app built as the command builds it, against a real
server, through Starlette's TestClient; and ``rq-cli web`` itself on a free port."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from html import unescape
from typing import Any

import httpx
import redis
from servers import free_port

with warnings.catch_warnings():  # (Starlette 1.x would rather have httpx2; httpx works)
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

from rq_cli.cli.common import State
from rq_cli.cli.dash import global_options
from rq_cli.cli.inspect import stats_targets
from rq_cli.core.queue import WorkQueue
from rq_cli.core.types import NewItem
from rq_cli.web.guard import Guard
from rq_cli.web.pages import Web, make_app


def seed(r: redis.Redis, name: str, *, dead: int = 0, pending: int = 0) -> WorkQueue:
    """A queue with ``pending`` items and ``dead`` dead-lettered ones (ids ``d-000``...,
    every third with the error ``timeout``, the rest ``bad input``)."""
    wq = WorkQueue(r, name)
    if dead:
        wq.push([NewItem(json.dumps({"n": i, "user": f"u-{i % 3}"}).encode(), f"d-{i:03d}")
                 for i in range(dead)])
        for item in wq.lease(dead, lease_seconds=60):
            n = int(item.id[2:])
            wq.fail([item.id], error="timeout" if n % 3 == 0 else "bad input", dead=True)
    if pending:
        wq.push([NewItem(json.dumps({"n": i}).encode(), f"p-{i:03d}") for i in range(pending)])
    return wq


def make_web(url: str, *queues: str, token: str | None = None,
             read_only: bool = False) -> Web:
    st = State(url=url, no_config=True)
    return Web(stats_targets(st, list(queues), False), guard=Guard(token), read_only=read_only,
               cli_prefix=global_options(st), st=st, log=io.StringIO())


def client(web: Web, **kwargs: object) -> TestClient:
    """A client of the app as a browser on this machine reaches it (``Host: localhost``:
    another host name gets no page)."""
    kwargs.setdefault("base_url", "http://localhost")
    return TestClient(make_app(web), **kwargs)  # type: ignore[arg-type]


def form_of(html: str) -> dict[str, str]:
    """The hidden fields of a confirmation's form, as the browser posts them."""
    return {k: unescape(v) for k, v in
            re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', html)}


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', html)
    assert found, html
    return found.group(1)


def confirm_and_do(c: TestClient, name: str, **params: str) -> tuple[str, str]:
    """The confirmation page of an action and the page that doing it shows."""
    page = c.get(f"/q/{name}/confirm", params=params)
    assert page.status_code == 200, page.text
    done = c.post(f"/q/{name}/do", data=form_of(page.text))
    assert done.status_code == 200, done.text
    return page.text, done.text


#: Debian's chromium, which Playwright drives (the browser tests, the manual's screenshots).
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def launch_chromium(playwright: Any) -> Any:
    """A headless chromium for ``playwright`` (``sync_playwright()``'s), as a container
    runs it: no sandbox, no GPU, no /dev/shm."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=[
        "--no-sandbox", "--headless", "--disable-gpu", "--disable-dev-shm-usage"])


@contextmanager
def running(url: str, *args: str, env: dict[str, str] | None = None,
            stderr: list[str] | None = None) -> Iterator[str]:
    """``rq-cli --url URL --no-config web ARGS --bind 127.0.0.1:PORT`` running; yields its
    base URL; once stopped, what it wrote to stderr is appended to ``stderr``."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "rq_cli", "--url", url, "--no-config",
                             "web", *args, "--bind", f"127.0.0.1:{port}"],
                            env={**os.environ, **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.get(base + "/", timeout=2)
                break
            except httpx.TransportError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(proc.communicate()) from None
                time.sleep(0.05)
        yield base
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
        if stderr is not None:
            stderr.append(err)
