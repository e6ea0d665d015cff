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


# -- what the config and URL settings say, and which wins (issue 29) ---------------------------
def test_an_explicit_config_flag_beats_rq_cli_no_config(cli, tmp_path):
    """A broken file named with --config is read (exit 78), whatever $RQ_CLI_NO_CONFIG says:
    the flag on the command line wins over the environment."""
    broken = write_config(tmp_path, "this is not toml\n", name="broken.toml")
    run = cli("--config", str(broken), "stats", "q", env={"RQ_CLI_NO_CONFIG": "1"})
    assert run.exit_code == 78, run
    assert str(broken) in run.stderr and "invalid TOML" in run.stderr
    # the other way round: --no-config beats $RQ_CLI_CONFIG
    run = cli("--no-config", "config", "path", env={"RQ_CLI_CONFIG": str(broken)})
    assert run.exit_code == 3 and "--no-config" in run.stdout + run.stderr, run


def test_config_and_no_config_at_the_same_level_are_a_usage_error(cli, tmp_path):
    good = write_config(tmp_path, "", name="good.toml")
    run = cli("--config", str(good), "--no-config", "stats", "q")
    assert run.exit_code == 2 and "--config" in run.stderr and "--no-config" in run.stderr, run
    assert len(run.stderr.splitlines()) == 1
    run = cli("stats", "q", env={"RQ_CLI_CONFIG": str(good), "RQ_CLI_NO_CONFIG": "1"})
    assert run.exit_code == 2 and "$RQ_CLI_CONFIG" in run.stderr, run
    assert "$RQ_CLI_NO_CONFIG" in run.stderr and len(run.stderr.splitlines()) == 1


def test_a_config_from_the_environment_is_named_so(cli, tmp_path):
    run = cli("stats", "q", env={"RQ_CLI_CONFIG": str(tmp_path / "nope.toml")})
    assert run.exit_code == 78
    assert "(from $RQ_CLI_CONFIG) does not exist" in run.stderr, run.stderr
    # a device is no config file: said so, not "does not exist", and never read
    run = cli("stats", "q", env={"RQ_CLI_CONFIG": "/dev/zero"})
    assert run.exit_code == 78, run
    assert run.stderr == ("rq-cli: config file /dev/zero (from $RQ_CLI_CONFIG) is not a "
                          "regular file (a device, a pipe or a socket): name a file\n"), run
    run = cli("--config", "/dev/null", "stats", "q")
    assert run.exit_code == 78 and "/dev/null (from --config) is not a regular" in run.stderr


def test_an_empty_rq_cli_url_is_a_usage_error_as_url_is(cli):
    """``RQ_CLI_URL=`` (set, empty) no longer falls back to localhost silently: exit 2, as
    ``--url ''`` is."""
    env = cli("stats", "q", url=None, env={"RQ_CLI_URL": ""})
    for run in (cli("--url", "", "stats", "q", url=None), env):
        assert run.exit_code == 2, run
        assert run.stdout == "" and len(run.stderr.splitlines()) == 1
    assert "RQ_CLI_URL" in env.stderr and "empty" in env.stderr, env.stderr
    assert "localhost" not in env.stderr
    run = cli("stats", "q", url=None, env={"RQ_CLI_CONFIG": ""})
    assert run.exit_code == 2 and "RQ_CLI_CONFIG" in run.stderr and "empty" in run.stderr


def test_a_slash_in_a_password_gets_one_message(cli):
    """An unencoded / in a URL's password: the hint to percent-encode it, not spliced into
    another message ("the path must be a database number ... not it does not parse")."""
    run = cli("stats", "q", url="redis://:pa/ss@127.0.0.1:1/0")
    assert run.exit_code == 2, run
    assert run.stderr == ("rq-cli: cannot use server URL 'redis://:***@127.0.0.1:1/0': it does "
                          "not parse as meant: a password holding / ? # [ or ] must be written "
                          "percent-encoded: %2F %3F %23 %5B %5D\n"), run.stderr
    assert "pa/ss" not in run.stderr and "ss@" not in run.stderr


def test_config_show_includes_the_web_and_dash_tables_token_hidden(cli, tmp_path):
    write_config(tmp_path, '[web]\nread_only = true\ntoken = "web-secret-0123456789"\n'
                           "[dash]\nread_only = true\n")
    run = cli("config", "show", env={"RQ_CLI_WEB_TOKEN": ""})
    assert run.exit_code == 0 and "web-secret" not in run.stdout, run
    assert run.one["web"] == {"read_only": True, "token": "(hidden)", "token_source": "file"}
    assert run.one["dash"] == {"read_only": True}
    run = cli("config", "show", env={"RQ_CLI_WEB_TOKEN": "env-secret-0123456789"}, tty=True)
    assert "env-secret" not in run.stdout
    assert "web: read_only yes, token (hidden) (from env:RQ_CLI_WEB_TOKEN)" in run.stdout
    assert "dash: read_only yes" in run.stdout
    write_config(tmp_path, "")
    shown = cli("config", "show", env={"RQ_CLI_WEB_TOKEN": ""}).one
    assert shown["web"] == {"read_only": False, "token": "(not set)"}
