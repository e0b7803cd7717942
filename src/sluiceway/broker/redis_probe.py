"""What a Redis user may do, learned without CONFIG (a managed Redis denies it).

:func:`notify_flags` reads ``notify-keyspace-events`` with CONFIG GET and, where CONFIG is
denied, probes: it subscribes to the keyspace channels of test keys under ``sluiceway:probe:``
and the keyevent channels of the events it makes, writes a sorted set, a list and a string
there, deletes them and reads what was published (a PING on the subscriber connection marks the
end: its answer comes after every notification of the writes). The flags found are spelled as
Redis spells them; a user that may not subscribe or write there gets "" (polling).

:func:`check_permissions` tries, at open, what the processor and the coordinator need: the Lua
scripts loaded, a transaction, each key family. A user the ACL denies fails there with one
error naming the permission to grant, instead of reporting ready and processing nothing.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Sequence
from typing import Any

from redis.exceptions import NoPermissionError, ResponseError

from sluiceway.errors import BrokerError

__all__ = ["PROBE_PREFIX", "check_permissions", "notify_flags", "probe_flags"]

_log = logging.getLogger(__name__)

PROBE_PREFIX = "sluiceway:probe:"
_CLASS_OF_EVENT = {"zadd": "z", "rpush": "l", "set": "$", "del": "g", "expire": "g"}
_PROBE_SECONDS = 2.0  # wall seconds for the probe's answers on a slow link
_END = "sluiceway-probe-end"
# Message types of a subscribed connection; anything else read there is the PING's answer
# (RESP2 spells it "pong", RESP3 answers the plain string, which redis-py reads oddly).
_SUBSCRIBED = frozenset({"subscribe", "message"})


async def notify_flags(client: Any, db: int) -> tuple[str, str]:
    """The server's keyspace-notification flags and how they were learned."""
    try:
        reply = await client.config_get("notify-keyspace-events")
    except ResponseError:  # CONFIG denied: an ACL, or a provider that renames it
        return await probe_flags(client, db), "probed with a test key, CONFIG denied"
    return str(reply.get("notify-keyspace-events", "")), "CONFIG GET"


async def probe_flags(client: Any, db: int) -> str:
    """The notification flags the server publishes for this user's writes ("" for none, or
    when the user may not subscribe or write under ``sluiceway:probe:``)."""
    key = f"{PROBE_PREFIX}{secrets.token_hex(6)}"
    pubsub = client.pubsub()
    try:
        # SUBSCRIBE, not PSUBSCRIBE: an ACL grants channel patterns to SUBSCRIBE by glob, but
        # to PSUBSCRIBE only when the pattern is written out in the grant.
        channels = [f"__keyspace@{db}__:{key}:{kind}" for kind in "zls"]
        channels += [f"__keyevent@{db}__:{event}" for event in ("zadd", "rpush", "set", "del")]
        await pubsub.subscribe(*channels)
        await _until(pubsub, lambda m: m["type"] == "subscribe" and m["data"] == len(channels))
        await client.zadd(f"{key}:z", {"p": 0.0})
        await client.rpush(f"{key}:l", "p")
        await client.set(f"{key}:s", "p")
        await client.delete(f"{key}:z", f"{key}:l", f"{key}:s")
        await pubsub.ping(_END)
        seen = await _until(pubsub, lambda m: m["type"] not in _SUBSCRIBED)
    except ResponseError as exc:
        _log.warning("keyspace notifications could not be probed (%s): polling", exc)
        return ""
    finally:
        await pubsub.aclose()
    return _flags(seen, key)


async def _until(pubsub: Any, last: Any) -> list[dict[str, Any]]:
    """Messages read until one for which ``last(message)`` holds (it included)."""
    seen: list[dict[str, Any]] = []
    end = asyncio.get_running_loop().time() + _PROBE_SECONDS
    while asyncio.get_running_loop().time() < end:
        message = await pubsub.get_message(timeout=0.1)
        if message is None:
            continue
        seen.append(message)
        if last(message):
            return seen
    raise ResponseError("no answer from the subscriber connection")


def _flags(messages: Sequence[dict[str, Any]], key: str) -> str:
    channels, classes = "", set()
    for message in messages:
        if message["type"] != "message":
            continue
        channel, data = str(message["channel"]), str(message["data"])
        if channel.startswith("__keyspace@"):
            channels += "" if "K" in channels else "K"
            classes.add(_CLASS_OF_EVENT.get(data, ""))
        elif data.startswith(key):
            channels += "" if "E" in channels else "E"
            classes.add(_CLASS_OF_EVENT.get(channel.rsplit(":", 1)[-1], ""))
    return channels + "".join(sorted(classes - {""})) if channels else ""


async def check_permissions(client: Any, scripts: Sequence[str], keys: Sequence[str]) -> None:
    """Load ``scripts``, run a transaction and read each of ``keys`` as this user; BrokerError
    naming the permission to grant when the ACL denies one."""
    steps: list[tuple[str, Any]] = [
        (f"+script|load (or +@scripting), to load {len(scripts)} Lua scripts",
         lambda: asyncio.gather(*(client.script_load(s) for s in scripts))),
    ]  # fmt: skip
    for key in keys:
        steps.append((f"~{_pattern(key)} (its keys)", lambda key=key: client.exists(key)))
    steps.append(("+@transaction (MULTI, EXEC)",
                  lambda: client.pipeline(transaction=True).exists(keys[0]).execute()))  # fmt: skip
    for grant, step in steps:
        try:
            await step()
        except NoPermissionError as exc:
            raise BrokerError(f"the Redis user may not do what the broker needs: grant {grant} "
                              f"(docs/operations.md, 'Managed Redis'): {exc}") from exc  # fmt: skip


def _pattern(key: str) -> str:
    """``request-active:x`` -> ``request-active:*``; a plain key stays itself."""
    head, sep, _ = key.partition(":")
    return f"{head}:*" if sep else key
