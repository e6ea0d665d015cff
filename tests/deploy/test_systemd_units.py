"""The systemd units shipped in contrib/systemd/ (the manual's "Running as a service"): each
passes ``systemd-analyze verify``, runs as a user other than root, waits for the network it
asks for, and is sandboxed to the exposure score the manual states; the manual shows each
file as it is.

Skipped where systemd-analyze is absent (``apt-get install systemd`` brings it). The units
name /usr/local/bin/rq-cli and a job under /opt/app, which verify wants to exist: the copies
checked here name the installed rq-cli and /bin/cat instead.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
UNITS = ROOT / "contrib" / "systemd"
WORKER, CLEAN, TIMER = "rq-worker@.service", "rq-clean.service", "rq-clean.timer"
MANUAL = ROOT / "docs" / "workers.md"

needs_systemd = pytest.mark.skipif(shutil.which("systemd-analyze") is None,
                                   reason="systemd-analyze is not installed")


def unit(name: str) -> str:
    return (UNITS / name).read_text()


def settings(name: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in unit(name).splitlines():
        if "=" in line and not line.startswith("#"):
            key, _, value = line.partition("=")
            out.setdefault(key, []).append(value)
    return out


@pytest.fixture
def installed(tmp_path: Path) -> Path:
    """The units, as a host would install them (instance 1 of the worker's template)."""
    rq_cli = Path(sys.executable).with_name("rq-cli")
    for name, as_name in ((WORKER, "rq-worker@1.service"), (CLEAN, CLEAN), (TIMER, TIMER)):
        text = unit(name).replace("/usr/local/bin/rq-cli", str(rq_cli))
        (tmp_path / as_name).write_text(text.replace("/opt/app/send-email.sh", "/bin/cat"))
    return tmp_path


@needs_systemd
def test_every_unit_passes_systemd_analyze_verify(installed: Path) -> None:
    names = ["rq-worker@1.service", CLEAN, TIMER]
    got = subprocess.run(["systemd-analyze", "verify", *names], cwd=installed,
                         capture_output=True, text=True, timeout=60)
    assert got.returncode == 0 and got.stderr == "" and got.stdout == "", got


@needs_systemd
@pytest.mark.parametrize("name", ["rq-worker@1.service", CLEAN])
def test_the_exposure_score_is_the_one_the_manual_states(installed: Path, name: str) -> None:
    got = subprocess.run(["systemd-analyze", "security", "--offline=yes", name],
                         cwd=installed, capture_output=True, text=True, timeout=60)
    score = re.search(r"Overall exposure level for \S+: (\d+\.\d) (\w+)", got.stdout)
    assert score, got
    assert float(score[1]) <= 2.0 and score[2] == "OK"
    manual = " ".join(MANUAL.read_text().split())
    who = "the worker" if name.startswith("rq-worker") else "`clean`"
    assert f"rates {who} **{score[1]} OK**" in manual or f"and {who} **{score[1]} OK**" in manual


@pytest.mark.parametrize("name", [WORKER, CLEAN])
def test_services_run_as_a_user_after_the_network_and_sandboxed(name: str) -> None:
    s = settings(name)
    assert s.get("User", ["root"]) != ["root"] or s.get("DynamicUser") == ["yes"]
    assert s["Wants"] == ["network-online.target"] and s["After"] == ["network-online.target"]
    for key, value in (("NoNewPrivileges", "yes"), ("ProtectSystem", "strict"),
                       ("PrivateTmp", "yes"), ("ProtectHome", "yes"),
                       ("CapabilityBoundingSet", "")):
        assert s[key] == [value], key


def test_the_manual_shows_each_unit_as_shipped() -> None:
    blocks = re.findall(r"```ini\n(.*?)```", MANUAL.read_text(), re.S)
    assert blocks == [unit(WORKER), unit(CLEAN), unit(TIMER)]
