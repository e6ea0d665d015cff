"""rq-cli config path|show, and config errors through any command (exit 78)."""

from __future__ import annotations

from cli_helpers import write_config

pytest_plugins = ["cli_helpers"]  # the cli(...) fixture


def test_config_path_prints_the_file(cli, tmp_path):
    path = write_config(tmp_path, "")
    run = cli("config", "path")
    assert run.exit_code == 0
    assert run.stdout == f"{path}\n"


def test_config_path_json(cli, tmp_path):
    path = write_config(tmp_path, "")
    row = cli("config", "path", "--json").one
    assert row["path"] == str(path)
    assert row["searched"][0]["exists"] is True


def test_config_path_none_exits_3(cli):
    run = cli("config", "path")
    assert run.exit_code == 3
    assert "rq-cli.toml" in run.stderr


def test_config_flag_and_env(cli, tmp_path):
    other = write_config(tmp_path, "", name="other.toml")
    assert cli("--config", str(other), "config", "path").stdout == f"{other}\n"
    assert cli("config", "path", env={"RQ_CLI_CONFIG": str(other)}).stdout == f"{other}\n"
    assert cli("--no-config", "config", "path").exit_code == 3


def test_config_show_hides_secrets(cli, tmp_path):
    write_config(tmp_path, 'url = "redis://user:filesecret@127.0.0.1:1/0"\n'
                           "[queues.q]\npassword_env = \"Q_PW\"\nmax_attempts = 2\n")
    run = cli("config", "show", url=None, env={"Q_PW": "envsecret"})
    assert run.exit_code == 0, run
    assert "filesecret" not in run.stdout and "envsecret" not in run.stdout
    shown = run.one
    assert shown["url"] == "redis://user:***@127.0.0.1:1/0"
    assert shown["queues"]["q"]["max_attempts"] == 2
    assert shown["queues"]["q"]["password"] == "(hidden)"


def test_config_show_table(cli, tmp_path):
    write_config(tmp_path, "[queues.emails]\n")
    run = cli("config", "show", tty=True)
    assert run.exit_code == 0 and "emails" in run.stdout


def test_bad_config_exits_78_naming_the_line(cli, tmp_path, r):
    path = write_config(tmp_path, "[queues.q]\nprefix = \"x\"\nlease_secnds = 3\n")
    run = cli("push", "q", "{}")
    assert run.exit_code == 78
    assert f"{path} line 3" in run.stderr and "lease_seconds" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1
    assert r.keys("*") == []


def test_configured_queue_uses_its_prefix_and_options(cli, tmp_path, r):
    write_config(tmp_path, '[queues.emails]\nprefix = "app:{emails}"\nlease_seconds = 7\n')
    cli("push", "emails", "--id", "a", "{}")
    assert r.exists("app:{emails}:item:a")
    import time

    assert cli("lease", "emails").one["lease_expires_at"] < time.time() + 8
    assert cli("--prefix", "push", "emails", "--id", "b", "{}").exit_code == 0
    assert r.exists("emails:item:b")


def test_configured_url(cli, tmp_path, server_url, r):
    write_config(tmp_path, f'[queues.q]\nurl = "{server_url}"\n')
    assert cli("push", "q", "{}", url=None).exit_code == 0
    assert cli("push", "q", "{}", url=None, env={"RQ_CLI_URL": "redis://127.0.0.1:1/0"}
               ).exit_code == 69
