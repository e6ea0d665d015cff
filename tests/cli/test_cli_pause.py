"""rq-cli pause / resume."""

from __future__ import annotations

pytest_plugins = ["cli_helpers"]  # the cli(...) fixture



def test_pause_and_resume(cli):
    cli("push", "q", "{}")
    assert cli("pause", "q").one == {"queue": "q", "paused": True}
    assert cli("stats", "q").one["paused"] is True
    assert cli("lease", "q").exit_code == 3
    assert cli("resume", "q").one == {"queue": "q", "paused": False}
    assert cli("lease", "q").exit_code == 0
