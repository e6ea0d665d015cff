"""``rq-cli web`` itself: a real Uvicorn server on a free port of loopback, the addresses it
refuses without a token, the token from the environment, and the extra missing."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("uvicorn")

import httpx
from web_helpers import form_of, running, seed

from rq_cli.errors import ExitCode


def rq(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rq_cli", *args], capture_output=True,
                          text=True, timeout=30, env={**os.environ, **(env or {})})


def test_it_answers_on_loopback(server_url, r):
    seed(r, "emails", dead=2)
    with running(server_url, "emails") as base:
        page = httpx.get(base + "/")
        assert page.status_code == 200 and 'data-queue="emails"' in page.text
        assert httpx.get(base + "/q/emails?tab=dead").text.count("/item/d-") == 2


def test_a_token_from_the_environment_is_required_bearer_or_basic(server_url, r):
    seed(r, "emails", dead=1)
    env = {"RQ_CLI_WEB_TOKEN": "t0ken-xyz"}
    with running(server_url, "emails", env=env) as base:
        assert httpx.get(base + "/").status_code == 401
        assert httpx.get(base + "/", headers={"Authorization": "Bearer t0ken-xyz"}
                         ).status_code == 200
        assert httpx.get(base + "/", auth=("bob", "t0ken-xyz")).status_code == 200
        assert httpx.get(base + "/", auth=("bob", "wrong")).status_code == 401


@pytest.mark.parametrize("bind", ["0.0.0.0:8999", "[::]:8999"])
def test_a_non_loopback_address_is_refused_without_a_token(server_url, bind):
    got = rq("--url", server_url, "web", "emails", "--bind", bind,
             env={"RQ_CLI_WEB_TOKEN": ""})
    assert got.returncode == ExitCode.USAGE
    assert "without a token" in got.stderr and got.stderr.count("\n") == 1


def test_a_bad_bind_is_a_usage_error(server_url):
    got = rq("--url", server_url, "web", "--bind", "localhost")
    assert got.returncode == ExitCode.USAGE and "HOST:PORT" in got.stderr


def test_without_the_web_extra_it_says_what_to_install(server_url):
    # starlette made unimportable, as on an install without the extra
    code = ("import sys; sys.modules['starlette'] = None; sys.argv = ['rq-cli'] + sys.argv[1:];"
            "from rq_cli.cli import run; run()")
    got = subprocess.run([sys.executable, "-c", code, "--url", server_url, "web", "emails"],
                         capture_output=True, text=True, timeout=30)
    assert got.returncode == ExitCode.UNAVAILABLE
    assert "pip install 'rqcli[web]'" in got.stderr


def test_the_config_web_table_token_and_read_only(tmp_path, server_url):
    from rq_cli.settings import config as configmod

    path = tmp_path / "rq-cli.toml"
    path.write_text('[web]\nread_only = true\ntoken = "from-config"\n')
    cfg = configmod.load(str(path))
    assert (cfg.web_read_only, cfg.web_token) == (True, "from-config")
    assert configmod.load(None, no_config=True).web_token is None
    path.write_text('[web]\nread_only = "yes"\n')
    got = rq("--config", str(path), "--url", server_url, "web", "emails")
    assert got.returncode == ExitCode.CONFIG and "read_only in [web]" in got.stderr
    path.write_text('[web]\ntokn = "x"\n')
    assert rq("--config", str(path), "--url", server_url, "web").returncode == ExitCode.CONFIG
    # the config's token lets a non-loopback address through the check: it fails later, on
    # an address this machine does not have, in one line
    path.write_text('[web]\ntoken = "from-config-0123456789"\n')
    got = rq("--config", str(path), "--url", server_url, "web", "emails", "--bind",
             "192.0.2.1:1", env={"RQ_CLI_WEB_TOKEN": ""})
    assert "without a token" not in got.stderr
    assert got.returncode == ExitCode.USAGE and "cannot listen on 192.0.2.1:1" in got.stderr


def test_an_address_in_use_is_one_line_not_a_crash(server_url):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        got = rq("--url", server_url, "web", "emails", "--bind", f"127.0.0.1:{port}")
    assert got.returncode == ExitCode.USAGE and "cannot listen on" in got.stderr
    assert got.stderr.count("\n") == 1


def test_an_action_over_http_with_basic_auth_is_logged_with_who_asked(server_url, r):
    import re

    wq = seed(r, "emails", dead=6)
    err: list[str] = []
    env = {"RQ_CLI_WEB_TOKEN": "t0ken-xyz"}
    with running(server_url, "emails", env=env, stderr=err) as base, \
            httpx.Client(base_url=base, auth=("alice", "t0ken-xyz")) as c:
        page = c.get("/q/emails/confirm", params={"action": "requeue"})
        assert "Requeue 6 dead items of emails (every dead item)" in page.text
        csrf = re.search(r'name="csrf" value="(\w+)"', page.text).group(1)
        assert c.post("/q/emails/do", data={"action": "requeue"}).status_code == 403
        # (the count the confirmation showed travels in its form: without it, nothing)
        refused = c.post("/q/emails/do", data={"action": "requeue", "csrf": csrf})
        assert refused.status_code == 400 and "no confirmed count" in refused.text
        posted = c.post("/q/emails/do", data=form_of(page.text))
        # redirect after POST: the result is a page of its own (a reload does nothing more)
        assert posted.status_code == 303
        done = c.get(posted.headers["location"])
        assert done.status_code == 200 and "requeued 6" in done.text
    assert (wq.stats().pending, wq.stats().dead) == (6, 0)
    [log] = [line for line in err[0].splitlines() if "asked:" in line]
    assert log.startswith("rq-cli web: alice@127.0.0.1 asked: rq-cli --url redis://")
    assert "requeue-dead emails --all -> requeued 6" in log and "t0ken-xyz" not in err[0]


def test_the_start_up_line_and_the_overview_count_one_queue_as_one(server_url, r):
    seed(r, "emails", dead=1)
    err: list[str] = []
    with running(server_url, "emails", stderr=err) as base:
        page = httpx.get(base + "/")
        assert "1 queue ·" in page.text and "1 queues" not in page.text
    assert "(1 queue; Ctrl-C stops)" in err[0], err
