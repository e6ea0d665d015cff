"""rq_cli.settings.config: discovery order, URL precedence, options, and errors naming file and
line."""

from __future__ import annotations

from pathlib import Path

import pytest

from rq_cli.core.types import QueueOptions
from rq_cli.errors import ConfigError, ExitCode
from rq_cli.settings import config


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# -- discovery ---------------------------------------------------------------------------------
def test_discovery_order(tmp_path):
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    assert config.find(env=env, cwd=tmp_path) is None
    xdg = write(tmp_path / "xdg" / "rq-cli" / "config.toml", "")
    assert config.find(env=env, cwd=tmp_path) == xdg
    local = write(tmp_path / "rq-cli.toml", "")
    assert config.find(env=env, cwd=tmp_path) == local
    from_env = write(tmp_path / "env.toml", "")
    assert config.find(env={**env, "RQ_CLI_CONFIG": str(from_env)}, cwd=tmp_path) == from_env
    flag = write(tmp_path / "flag.toml", "")
    assert config.find(flag, env={**env, "RQ_CLI_CONFIG": str(from_env)}, cwd=tmp_path) == flag
    assert config.find(flag, no_config=True, env=env, cwd=tmp_path) is None


def test_home_config_without_xdg(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    home = write(tmp_path / ".config" / "rq-cli" / "config.toml", "")
    assert config.find(env={}, cwd=tmp_path / "elsewhere") == home


def test_explicit_path_must_exist(tmp_path):
    with pytest.raises(ConfigError, match="does not exist") as err:
        config.find(tmp_path / "missing.toml", env={}, cwd=tmp_path)
    assert err.value.exit_code == ExitCode.CONFIG
    with pytest.raises(ConfigError, match="RQ_CLI_CONFIG"):
        config.find(env={"RQ_CLI_CONFIG": str(tmp_path / "nope.toml")}, cwd=tmp_path)


# -- URL precedence ----------------------------------------------------------------------------
def test_url_precedence():
    cfg = config.parse_text('url = "redis://top/0"\n'
                            '[queues.a]\nurl = "redis://queue/0"\n[queues.b]\n')
    env = {"REDIS_URL": "redis://env/0"}
    assert cfg.resolve("a", env=env).url == "redis://queue/0"
    assert cfg.resolve("b", env=env).url == "redis://top/0"
    assert cfg.resolve("unknown", env=env).url == "redis://top/0"
    assert cfg.resolve("a", env={**env, "RQ_CLI_URL": "redis://rq/0"}).url == "redis://rq/0"
    assert cfg.resolve("a", url="redis://flag/0",
                       env={"RQ_CLI_URL": "redis://rq/0"}).url == "redis://flag/0"
    bare = config.Config()
    assert bare.resolve("x", env=env).url == "redis://env/0"
    assert bare.resolve("x", env={}).url == config.DEFAULT_URL


def test_unknown_name_is_the_prefix_and_prefix_flag_forces_it():
    cfg = config.parse_text('[queues.emails]\nprefix = "app:{emails}"\nmax_attempts = 2\n')
    spec = cfg.resolve("emails", env={})
    assert (spec.prefix, spec.configured, spec.options.max_attempts) == ("app:{emails}", True, 2)
    raw = cfg.resolve("emails", raw_prefix=True, env={})
    assert (raw.prefix, raw.configured, raw.options.max_attempts) == ("emails", False, 5)
    assert cfg.resolve("jobs", env={}).prefix == "jobs"


def test_options_defaults_and_overrides():
    cfg = config.parse_text(
        "[defaults]\nlease_seconds = 60\nmax_attempts = 9\nlayout = \"v0.3\"\n"
        "[queues.q]\nmax_attempts = 0\nrequeue = \"front\"\nretry_backoff = 1.5\n")
    assert cfg.resolve("other", env={}).options == QueueOptions(
        lease_seconds=60.0, max_attempts=9, layout="v0.3")
    assert cfg.resolve("q", env={}).options == QueueOptions(
        lease_seconds=60.0, max_attempts=0, layout="v0.3", requeue="front", retry_backoff=1.5)


def test_password_env():
    cfg = config.parse_text('[queues.q]\nurl = "redis://h/0"\npassword_env = "Q_PW"\n')
    spec = cfg.resolve("q", env={"Q_PW": "s3cret"})
    assert spec.password == "s3cret"
    assert "s3cret" not in repr(spec)
    with pytest.raises(ConfigError, match="export Q_PW"):
        cfg.resolve("q", env={})
    # --url / $RQ_CLI_URL name another server: the queue's password does not follow
    assert cfg.resolve("q", url="redis://other/0", env={}).password is None


# -- errors ------------------------------------------------------------------------------------
def test_unknown_key_names_file_line_and_closest_key(tmp_path):
    path = write(tmp_path / "c.toml", '[defaults]\nlease_seconds = 5\n\n[queues.emails]\n'
                                      'prefix = "e"\nmax_attempt = 3\n')
    with pytest.raises(ConfigError) as err:
        config.parse_file(path)
    text = str(err.value)
    assert str(path) in text and "line 6" in text
    assert "'max_attempt'" in text and "did you mean 'max_attempts'" in text
    assert err.value.exit_code == 78


def test_unknown_top_level_key(tmp_path):
    path = write(tmp_path / "c.toml", 'urll = "redis://x"\n')
    with pytest.raises(ConfigError, match=r"line 1: unknown key 'urll'.*did you mean 'url'"):
        config.parse_file(path)


def test_unknown_key_in_dotted_form(tmp_path):
    path = write(tmp_path / "c.toml", '\n\nqueues.a.leese_seconds = 3\n')
    with pytest.raises(ConfigError, match=r"line 3: .*'leese_seconds'.*'lease_seconds'"):
        config.parse_file(path)


@pytest.mark.parametrize("text, message", [
    ("[defaults]\nlease_seconds = \"5\"\n",
     "line 2: lease_seconds in [defaults] must be a number, not a string"),
    ("[defaults]\nmax_attempts = 2.5\n", "line 2: max_attempts in [defaults] must be an integer"),
    ("[defaults]\nmax_attempts = true\n", "must be an integer, not a boolean"),
    ("[defaults]\nlease_seconds = 0\n", "must be greater than 0"),
    ("[queues.q]\nlayout = \"v2\"\n", "line 2: layout in [queues.q] must be one of compat"),
    ("[queues.q]\nrequeue = \"middle\"\n", "must be back or front"),
    ("url = 5\n", "line 1: url in the top level must be a string"),
    ("queues = 3\n", "queues must be a table"),
    ("[queues]\nq = 1\n", "must be a table"),
    ("[queues.q]\nprefix = \"\"\n", "prefix cannot be empty"),
])
def test_wrong_types_name_the_line(tmp_path, text, message):
    path = write(tmp_path / "c.toml", text)
    with pytest.raises(ConfigError) as err:
        config.parse_file(path)
    assert message in str(err.value)
    assert str(path) in str(err.value)


def test_invalid_toml(tmp_path):
    path = write(tmp_path / "c.toml", "[queues.q\n")
    with pytest.raises(ConfigError, match=r"invalid TOML.*line 1"):
        config.parse_file(path)


def test_not_utf8(tmp_path):
    path = tmp_path / "c.toml"
    path.write_bytes(b"url = \"\xff\"\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        config.parse_file(path)


# -- show --------------------------------------------------------------------------------------
def test_show_hides_secrets():
    cfg = config.parse_text('url = "redis://u:topsecret@h/0"\n'
                            '[queues.q]\npassword_env = "Q_PW"\n')
    shown = cfg.show(env={"Q_PW": "pw-value"},
                     mask=lambda u: u.replace("topsecret", "***"))
    text = repr(shown)
    assert "topsecret" not in text and "pw-value" not in text
    assert shown["queues"]["q"]["password"] == "(hidden)"
    assert shown["queues"]["q"]["password_env"] == "Q_PW"


@pytest.mark.parametrize("value", ["0", "257", "2.5", '"3"', "true"])
def test_shards_must_be_a_whole_number_in_range(tmp_path, value):
    path = write(tmp_path / "c.toml", f'[queues.jobs]\nprefix = "app:{{jobs}}"\nshards = {value}\n')
    with pytest.raises(ConfigError, match=r"line 3: shards in \[queues.jobs\] must be a whole "
                                          r"number from 1 to 256"):
        config.parse_file(path)


def test_shards_reach_the_queue_spec(tmp_path):
    path = write(tmp_path / "c.toml", '[queues.jobs]\nprefix = "app:{jobs}"\nshards = 3\n')
    cfg = config.parse_file(path)
    assert cfg.resolve("jobs", env={}).shards == 3
    assert cfg.resolve("other", env={}).shards is None
