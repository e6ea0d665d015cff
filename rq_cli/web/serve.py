"""Where ``rq-cli web`` listens: loopback unless told, and never beyond it without a token;
and the Uvicorn server that runs the app."""

from __future__ import annotations

import ipaddress
import socket
import sys
from typing import TYPE_CHECKING

from ..errors import UsageError

if TYPE_CHECKING:
    from starlette.applications import Starlette

#: The default address: loopback only.
DEFAULT_BIND = "127.0.0.1:8325"


def parse_bind(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6; ``:PORT`` is loopback) as (host, port).
    HOST is an IP address or a host name (ASCII labels of 1 to 63 letters, digits and
    hyphens); PORT, ASCII digits up to 65535. UsageError (exit 2) for anything else."""
    host, sep, port = text.rpartition(":")
    if not sep or not (port.isascii() and port.isdigit()) or not 0 <= int(port) <= 65535:
        raise UsageError(f"--bind needs HOST:PORT (for example {DEFAULT_BIND}), not {text!r}")
    host = host.strip("[]") or "127.0.0.1"
    if not _is_address(host) and not _is_host_name(host):
        raise UsageError(f"--bind {text!r}: {host!r} is neither an IP address nor a host "
                         "name (letters, digits and hyphens, 63 at most between dots)")
    return host, int(port)


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _is_host_name(host: str) -> bool:
    labels = host.removesuffix(".").split(".")
    return len(host) <= 253 and all(
        0 < len(label) <= 63 and label.isascii() and label.replace("-", "").isalnum()
        and not label.startswith("-") and not label.endswith("-") for label in labels)


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` names is a loopback one (a name is resolved)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(str(i[4][0]).split("%")[0]).is_loopback
                               for i in infos)


def check_bind(host: str, token: str | None) -> None:
    """Refuse a non-loopback address without a token (UsageError, exit 2)."""
    if token is None and not is_loopback(host):
        raise UsageError(f"rq-cli web will not listen on {host} without a token: set "
                         "RQ_CLI_WEB_TOKEN (or [web] token in the config), or bind 127.0.0.1")


def serve(app: Starlette, host: str, port: int, banner: str = "") -> None:
    """Run ``app`` on ``host:port`` until Ctrl-C or SIGTERM (Uvicorn's access log off: the
    actions are logged by the app, with who asked); ``banner`` goes to stderr once the
    address is known to be free."""
    import uvicorn

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:  # (Uvicorn would exit 1, the code of a bug, for an address in use)
        with socket.socket(family) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as exc:
        raise UsageError(f"rq-cli web cannot listen on {host}:{port}: "
                         f"{exc.strerror or exc}") from None
    if banner:
        print(banner, file=sys.stderr, flush=True)
    uvicorn.run(app, host=host, port=port, access_log=False, log_level="warning",
                server_header=False)
