"""A replica set in Redis: expiring members, each with a held count, changed by one script.

Keys of one group share a hash tag (``sluiceway:replicas:{GROUP}:...``), so a group lives in
one Redis Cluster slot:

* ``...:expiry`` sorted set: member -> expiry, Unix milliseconds of the Redis server's clock
  (one clock for every replica);
* ``...:held`` hash: member -> what it holds (the router: capacity leases, in requests;
  the processor: requests in flight);
* ``...:info`` hash: member -> a JSON description (role, host, pid, started);
* ``...:blocked`` hash: members with demand held back for want of room, told on the
  ``...:freed`` channel when another member's call frees some (push, no polling).

:meth:`ReplicaSet.sync` is the one write. A member states what it holds now (an absolute
number, never a delta: a repeated, reordered or late call cannot corrupt the count, and after a
Redis restart or an expiry the next call rebuilds the member's entry) and asks for ``want``
more, granted while the group's total stays within ``cap``. Members whose expiry has passed are
removed first, so the leases of a replica that died are freed once its lease time is over.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

__all__ = [
    "UNBOUNDED",
    "Replica",
    "ReplicaSet",
    "SyncResult",
    "freed_channel",
    "group_keys",
    "replica_id",
]

UNBOUNDED = 2**31  # a cap that never binds (a group that only counts)

_SYNC = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local dead = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
for _, m in ipairs(dead) do
  redis.call('HDEL', KEYS[2], m)
  redis.call('HDEL', KEYS[3], m)
  redis.call('HDEL', KEYS[4], m)
end
if #dead > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now) end
local me = ARGV[1]
local held = tonumber(ARGV[2])
local before = tonumber(redis.call('HGET', KEYS[2], me) or '0')
local want = tonumber(ARGV[3])
local cap = tonumber(ARGV[4])
local others = 0
local all = redis.call('HGETALL', KEYS[2])
for i = 1, #all, 2 do
  if all[i] ~= me then others = others + tonumber(all[i + 1]) end
end
local grant = cap - others - held
if grant > want then grant = want end
if grant < 0 then grant = 0 end
redis.call('HSET', KEYS[2], me, held + grant)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[5]), me)
if ARGV[6] ~= '' then redis.call('HSET', KEYS[3], me, ARGV[6]) end
if ARGV[7] == '1' then redis.call('HSET', KEYS[4], me, 1) else redis.call('HDEL', KEYS[4], me) end
if (held < before or #dead > 0) and redis.call('HLEN', KEYS[4]) > 0 then
  redis.call('PUBLISH', ARGV[8], me)
end
return {grant, others, redis.call('ZCARD', KEYS[1])}
"""

_LEAVE = """
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
if redis.call('HLEN', KEYS[4]) > 0 then redis.call('PUBLISH', ARGV[2], ARGV[1]) end
return 1
"""


def replica_id() -> str:
    """This process's member name: host and pid for people, a random tail so a restarted
    process with the same pid is a new member."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"


def group_keys(group: str) -> tuple[str, str, str, str]:
    """The keys of ``group`` (expiry, held, info, blocked), in one hash slot."""
    base = f"sluiceway:replicas:{{{group}}}"
    return f"{base}:expiry", f"{base}:held", f"{base}:info", f"{base}:blocked"


def freed_channel(group: str) -> str:
    """Where a call that freed room tells the members holding demand back."""
    return f"sluiceway:replicas:{{{group}}}:freed"


@dataclass(frozen=True, slots=True)
class SyncResult:
    """What one sync returned: ``granted`` of the ``want``; ``others``: what the other live
    members hold; ``live``: live members, this one included."""

    granted: int
    others: int
    live: int


@dataclass(frozen=True, slots=True)
class Replica:
    """One live member as ``sluiceway status`` lists it."""

    group: str
    member: str
    held: int
    expires_in: float
    info: Mapping[str, Any]


class ReplicaSet:
    """One group's replica set on ``redis`` (a redis-py asyncio client, decoded replies)."""

    def __init__(self, redis: Any, group: str) -> None:
        self.redis = redis
        self.group = group
        self.keys = group_keys(group)
        self.channel = freed_channel(group)
        self._sync = redis.register_script(_SYNC)
        self._leave = redis.register_script(_LEAVE)

    async def sync(
        self,
        member: str,
        held: int,
        *,
        want: int = 0,
        cap: int = UNBOUNDED,
        ttl: float,
        info: Mapping[str, Any] | None = None,
        blocked: bool = False,
    ) -> SyncResult:
        """Renew ``member`` for ``ttl`` seconds holding ``held``, grant up to ``want`` more
        while the group's total stays within ``cap`` (one round trip). ``blocked``: the member
        holds demand back for want of room (it is told on :attr:`channel` when room frees)."""
        args: list[str | int] = [member, held, want, cap, max(1, round(ttl * 1000))]
        args.append("" if info is None else json.dumps(dict(info), sort_keys=True))
        args += ["1" if blocked else "0", self.channel]
        granted, others, live = await self._sync(keys=list(self.keys), args=args)
        return SyncResult(int(granted), int(others), int(live))

    async def leave(self, member: str) -> None:
        """Remove ``member`` now (a clean shutdown frees its share at once)."""
        await self._leave(keys=list(self.keys), args=[member, self.channel])

    async def members(self) -> list[Replica]:
        """Live members (expiry not passed), by name."""
        expiry_key, held_key, info_key, _ = self.keys
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.time()
            pipe.zrange(expiry_key, 0, -1, withscores=True)
            pipe.hgetall(held_key)
            pipe.hgetall(info_key)
            now_pair, expiries, held, infos = await pipe.execute()
        now_ms = int(now_pair[0]) * 1000 + int(now_pair[1]) // 1000
        out = []
        for member, expiry in cast(list[tuple[str, float]], expiries):
            if expiry <= now_ms:
                continue
            out.append(
                Replica(
                    self.group,
                    member,
                    int(held.get(member, 0)),
                    (expiry - now_ms) / 1000,
                    _info(infos.get(member)),
                )
            )
        return sorted(out, key=lambda r: r.member)


def _info(raw: str | None) -> Mapping[str, Any]:
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {"unreadable": raw}
    return value if isinstance(value, dict) else {"unreadable": raw}
