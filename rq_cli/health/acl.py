"""The ACL rights a queue needs, checked for the user a client logs in as (``rq-cli doctor``).

With ``ACL DRYRUN`` (Redis >= 7, Valkey), every command the manual's "ACL" lists, on one of the
queue's keys, in one round trip; a user not allowed DRYRUN gets harmless probes of the
commands a client sends itself. No Typer, no rich.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.scripting.scripts import FUNCTION_PREFIX
from .doctor import FAIL, OK, WARN, Check, as_text, read_all, reason

#: every command a queue needs, with arguments for ``ACL DRYRUN`` (K: a key of the queue,
#: SHA: a script digest): what the manual's "ACL" lists (a test checks they agree)
NEEDED: dict[str, str] = {
    "ping": "", "evalsha": "SHA 1 K", "script|load": "return", "scan": "0",
    "blmove": "K K RIGHT RIGHT 0", "blpop": "K 0", "time": "", "type": "K", "exists": "K",
    "get": "K", "mget": "K",
    "set": "K v", "mset": "K v", "del": "K", "unlink": "K", "pttl": "K", "pexpire": "K 1",
    "llen": "K", "ltrim": "K 0 0",
    "lindex": "K 0", "lrange": "K 0 0", "lpos": "K v", "lpush": "K v", "rpush": "K v",
    "rpop": "K", "rpoplpush": "K K", "lrem": "K 0 v", "lset": "K 0 v",
    "lmove": "K K RIGHT LEFT", "lpop": "K", "hget": "K f", "hmget": "K f", "hgetall": "K",
    "hset": "K f v", "hdel": "K f", "hincrby": "K f 1", "hlen": "K", "hscan": "K 0",
    "hrandfield": "K", "zadd": "K 0 m", "zrem": "K m", "zcard": "K", "zcount": "K 0 0",
    "zscore": "K m", "zmscore": "K m", "zrank": "K m", "zrevrank": "K m", "zrange": "K 0 0",
    "zrevrange": "K 0 0", "zrangebyscore": "K 0 0",
    "zremrangebyscore": "K 0 0", "zpopmin": "K", "zscan": "K 0",
    "zrandmember": "K", "hexists": "K f", "hsetnx": "K f v", "persist": "K", "sadd": "K m",
    "srem": "K m", "sismember": "K m", "sscan": "K 0", "srandmember": "K",
}
#: the faster calls of Functions (Redis >= 7, Valkey): without them, EVALSHA; and the
#: transactions of a bulk push: without them, push.lua calls (the manual's "ACL")
FASTER: dict[str, str] = {"fcall": "F 1 K", "function|load": "CODE", "multi": "", "exec": ""}
_EVALSHA = "the hot scripts run as EVALSHA, after one refused FCALL per process"
_PUSH_LUA = ("a bulk push runs as push.lua calls (more server time per item), after one "
             "refused MULTI per push")
#: what runs instead, without each of FASTER
_INSTEAD = {"fcall": _EVALSHA, "function|load": _EVALSHA, "multi": _PUSH_LUA,
            "exec": _PUSH_LUA}
_NO_SHA = "0" * 40


def _argv(command: str, template: str, key: str) -> list[str]:
    words = command.split("|") + template.split()
    fill = {"K": key, "SHA": _NO_SHA, "F": f"{FUNCTION_PREFIX}doctor_probe",
            "CODE": "#!lua name=rqcli_doctor_probe\nreturn 1"}
    return [fill.get(word, word) for word in words]


def queue_checks(client: Any, prefix: str, *, sharded: bool = False) -> list[Check]:
    """The ACL rights the queue of ``prefix`` needs, for the user the client logs in as.

    With ``ACL DRYRUN`` (Redis >= 7, Valkey; the user may need to be allowed it): every
    command of the manual's "ACL" on one of the queue's keys (``sharded``: and on one of its
    shards' keys, :func:`~rq_cli.core.sharding.shardmeta.acl_patterns`), in one round trip. Without
    it: probes that change nothing (EXISTS and UNLINK of a key no queue uses, EVALSHA of a
    script that does not exist, SCAN of one key): the commands inside the scripts are then
    not checked.
    """
    from ..core.sharding.shardmeta import acl_patterns, shard_prefix

    key = f"{prefix}:rq-cli-doctor-probe"  # (no queue key ends so: nothing is touched)
    keys = [key, f"{shard_prefix(prefix, 0, 0)}:rq-cli-doctor-probe"] if sharded else [key]
    patterns = acl_patterns(prefix) if sharded else [f"{prefix}:*"]
    whoami = read_all(client, {"user": ("ACL", "WHOAMI")})["user"]
    user = "default" if isinstance(whoami, BaseException) else as_text(whoami)
    wanted = {**NEEDED, **FASTER}
    got = read_all(client, {f"{name} {n}": ("ACL", "DRYRUN", user, *_argv(name, template, k))
                            for n, k in enumerate(keys) for name, template in wanted.items()})
    if any(isinstance(reply, BaseException) for reply in got.values()):
        return [_probe(client, user, key, reason(next(
            r for r in got.values() if isinstance(r, BaseException))), patterns)]
    denied: dict[str, str] = {}
    for asked, reply in got.items():
        if as_text(reply) != "OK":
            denied.setdefault(asked.split()[0], as_text(reply))
    return [_rights(user, patterns, denied, how="ACL DRYRUN")]


def _rights(user: str, patterns: list[str], denied: Mapping[str, str], how: str) -> Check:
    missing = [name for name in NEEDED if name in denied]
    slower = [name for name in FASTER if name in denied]
    plus = " ".join(f"+{name}" for name in missing + slower)
    where = " and ".join(patterns)
    if missing:
        return Check("acl", FAIL, f"user {user} may not run {', '.join(missing)} on "
                     f"{where} ({how}: {denied[missing[0]]})",
                     f"ACL SETUSER {user} {' '.join('~' + p for p in patterns)} {plus} "
                     "(the manual's Deployments page, 'ACL', lists the rule)")
    if slower:
        instead = "; ".join(dict.fromkeys(_INSTEAD[name] for name in slower))
        return Check("acl", WARN, f"user {user} may run what the queue needs, but not "
                     f"{', '.join(slower)} ({how}): {instead}", f"ACL SETUSER {user} {plus}")
    return Check("acl", OK, f"user {user} may run every command the queue needs on "
                 f"{where} ({how})")


def _probe(client: Any, user: str, key: str, why: str, patterns: list[str]) -> Check:
    """Rights without ACL DRYRUN: commands a client sends itself, each harmless."""
    prefix = key.rsplit(":", 1)[0]
    got = read_all(client, {
        "exists": ("EXISTS", key), "unlink": ("UNLINK", key),
        "evalsha": ("EVALSHA", _NO_SHA, "1", key), "scan": ("SCAN", "0", "COUNT", "1"),
        "fcall": ("FCALL", f"{FUNCTION_PREFIX}doctor_probe", "1", key)})
    denied = {name: reason(reply) for name, reply in got.items()
              if isinstance(reply, BaseException) and "acl" in reason(reply).lower()}
    how = f"probed EXISTS, UNLINK, EVALSHA, SCAN, FCALL; ACL DRYRUN {why}"
    check = _rights(user, patterns, denied, how)
    if check.status == OK and _may_do_anything(client, user):
        return Check("acl", OK, f"user {user} may run every command on every key (ACL GETUSER: "
                     "+@all, ~*)")
    if check.status == OK:
        return Check("acl", WARN, f"user {user}: EXISTS, UNLINK, EVALSHA, SCAN and FCALL on "
                     f"{prefix}:* are allowed; ACL DRYRUN {why}, so the commands inside the "
                     "scripts were not checked",
                     "run rq-cli doctor as a user allowed ACL DRYRUN, or compare the user's "
                     "rule in the manual's Deployments page ('ACL')")
    return check


def _may_do_anything(client: Any, user: str) -> bool:
    """True if ``ACL GETUSER`` (when the user may run it: the default user can) shows every
    command (+@all, no exception) on every key: on a server without ACL DRYRUN (Redis 6.2),
    the one case where the commands inside the scripts are known to be allowed."""
    reply = read_all(client, {"user": ("ACL", "GETUSER", user)})["user"]
    if isinstance(reply, list):  # (a flat list, if no client callback made it a dict)
        reply = dict(zip(reply[::2], reply[1::2], strict=False))
    if not isinstance(reply, dict):
        return False
    info = {as_text(k): v for k, v in reply.items()}
    flags = {as_text(f) for f in info.get("flags") or []}
    keys = info.get("keys")
    key_rules = [as_text(k) for k in keys] if isinstance(keys, list) else \
        as_text(keys or "").split()
    every_command = "allcommands" in flags or as_text(info.get("commands") or "") == "+@all"
    every_key = "allkeys" in flags or key_rules in (["*"], ["~*"])
    return every_command and every_key
