"""``rq-cli dash`` as a command: what it needs (a terminal, Textual), its config setting,
and that no other command pays for it."""

from __future__ import annotations

import subprocess
import sys

from cli_helpers import write_config

from rq_cli.settings import config as configmod

pytest_plugins = ["cli_helpers"]


def test_without_a_terminal_it_says_what_to_use_and_exits_2(cli):
    run = cli("dash", "jobs")
    assert run.exit_code == 2
    assert run.stderr.count("\n") == 1 and "needs a terminal" in run.stderr
    assert run.stdout == ""


def test_without_textual_it_says_how_to_install_it_and_exits_69(cli, monkeypatch):
    for name in [m for m in sys.modules if m == "textual" or m.startswith(("textual.",
                                                                          "rq_cli.dash"))]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "textual", None)  # as if it were not installed
    run = cli("dash", "jobs", tty=True)
    assert run.exit_code == 69
    assert run.stderr.count("\n") == 1
    assert "pip install 'rqcli[dash]'" in run.stderr and "textual" in run.stderr.lower()


def test_the_read_only_setting_of_the_config(tmp_path, cli):
    path = write_config(tmp_path, "[dash]\nread_only = true\n")
    assert configmod.load(str(path)).dash_read_only is True
    assert configmod.load(None, no_config=True).dash_read_only is False
    bad = write_config(tmp_path, '[dash]\nread_only = "yes"\n', name="bad.toml")
    run = cli("--config", str(bad), "stats", "jobs")
    assert run.exit_code == 78
    assert "read_only in [dash] must be a boolean" in run.stderr and "bad.toml" in run.stderr
    unknown = write_config(tmp_path, "[dash]\nreadonly = true\n", name="unknown.toml")
    run = cli("--config", str(unknown), "stats", "jobs")
    assert run.exit_code == 78 and "readonly" in run.stderr


def test_no_other_command_imports_textual(server_url):
    code = ("import sys\nfrom rq_cli.cli import main\n"
            "try:\n    main(['--url', sys.argv[1], '--no-config', 'stats', 'jobs'])\n"
            "except SystemExit as exit:\n    assert exit.code == 0, exit.code\n"
            "print(sorted(m for m in sys.modules if m.startswith(('textual', 'rq_cli.dash'))))\n")
    out = subprocess.run([sys.executable, "-c", code, server_url], capture_output=True,
                         text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"
