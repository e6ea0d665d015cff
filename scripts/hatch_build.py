"""The wheel's build hook (hatchling's custom build hook, pyproject.toml
``[tool.hatch.build.targets.wheel.hooks.custom]``): the man pages are generated from the app
at build time, by scripts/gen_man.py, and shipped as the wheel's shared data under
``share/man/man1/``, where ``man`` finds them in a virtualenv's or pipx's prefix. The checkout
keeps no copy of them (``python scripts/gen_man.py`` writes man/ for a look from a checkout).

The generator imports the app, so it runs in a child process of the build environment's
Python, which holds the project's runtime dependencies (``require-runtime-dependencies``).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

MAN_SECTION = "share/man/man1"


class ManPages(BuildHookInterface[Any]):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        self._out = Path(tempfile.mkdtemp(prefix="rq-cli-man-"))
        generator = Path(self.root) / "scripts" / "gen_man.py"
        done = subprocess.run([sys.executable, str(generator), "--out", str(self._out)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"scripts/gen_man.py failed:\n{done.stdout}{done.stderr}")
        pages = sorted(self._out.glob("*.1"))
        if not pages:
            raise RuntimeError("scripts/gen_man.py wrote no man page")
        for page in pages:
            build_data["shared_data"][str(page)] = f"{MAN_SECTION}/{page.name}"

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        shutil.rmtree(self._out, ignore_errors=True)
