"""A replica set in Redis: expiring members, each with a held count, changed by one script.

Keys of one group share a hash tag (``sluiceway:replicas:{GROUP}:...``), so a group lives in
one Redis Cluster slot:

* ``...:expiry`` sorted set: member -> expiry, Unix milliseconds of the Redis server's clock
  (one clock for every replica);
* ``...:held`` hash: member -> what it holds (the router: capacity leases, in requests;
  the processor: requests in flight);
* ``...:info`` hash: member -> a JSON description (role, host, pid, started);
* ``...:blocked`` hash: members with demand held back for want of room, told on the
  ``...:freed`` channel when another member's call frees some (push, no polling);
* ``...:waiting`` hash: member -> what it waits for, by band (``band:count,...``): room a
  member waits for in a higher band is granted to nobody in a lower one;
* ``...:bands`` hash: member -> what it holds, by band: where eviction orders can go;
* ``...:orders`` hash: member -> eviction orders not yet read (``below:count``); the writer
  publishes ``evict:MEMBER`` on the channel and the member reads them with its next call;
* ``...:tenants`` hash: member -> its waiting demand per band with its usage there and the
  tenants it serves (:mod:`~sluiceway.ledger.fair_share`): how replicas share a band fairly.

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from sluiceway.ledger.fair_share import BandDemand, decode, encode

__all__ = [
    "UNBOUNDED",
    "EvictionOrder",
    "Replica",
    "ReplicaSet",
    "SyncResult",
    "Victims",
    "freed_channel",
    "group_keys",
    "replica_id",
]

UNBOUNDED = 2**31  # a cap that never binds (a group that only counts)

_SYNC = """
local function pairs_of(text)
  local out = {}
  for p, c in string.gmatch(text, '(-?%d+):(%d+)') do out[#out + 1] = {tonumber(p), tonumber(c)} end
  return out
end
local function fields(key)
  local raw, out = redis.call('HGETALL', key), {}
  for i = 1, #raw, 2 do out[raw[i]] = raw[i + 1] end
  return out
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local dead = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
for _, m in ipairs(dead) do
  for k = 2, 8 do redis.call('HDEL', KEYS[k], m) end
end
if #dead > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now) end
local me = ARGV[1]
local held = tonumber(ARGV[2])
local cap = tonumber(ARGV[4])
-- one read of each hash; writes only where something changed
local held_all, demand_all = fields(KEYS[2]), fields(KEYS[5])
local bands_all, blocked_all = fields(KEYS[6]), fields(KEYS[4])
local tenants_all = fields(KEYS[8])
local before = tonumber(held_all[me] or '0')
local others, live = 0, 0
for m, n in pairs(held_all) do
  live = live + 1
  if m ~= me then others = others + tonumber(n) end
end
if held_all[me] == nil then live = live + 1 end
-- what the others wait for, by band: room for a higher band is not granted to a lower one
local waiting, waited_before = {}, 0
for m, text in pairs(demand_all) do
  for _, pc in ipairs(pairs_of(text)) do
    if m == me then
      waited_before = waited_before + pc[2]
    else
      waiting[pc[1]] = (waiting[pc[1]] or 0) + pc[2]
    end
  end
end
local function waiting_above(p)
  local n = 0
  for q, c in pairs(waiting) do if q > p then n = n + c end end
  return n
end
local free = cap - others - held
local granted, by_band = 0, {}
local wants = pairs_of(ARGV[3])
table.sort(wants, function(a, b) return a[1] > b[1] end)
for _, pc in ipairs(wants) do
  local k = math.min(pc[2], free - waiting_above(pc[1]))
  if k < 0 then k = 0 end
  free = free - k
  granted = granted + k
  by_band[#by_band + 1] = pc[1] .. ':' .. k
end
if held_all[me] == nil or held + granted ~= before then
  redis.call('HSET', KEYS[2], me, held + granted)
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[5]), me)
if ARGV[6] ~= '' then redis.call('HSET', KEYS[3], me, ARGV[6]) end
local blocked = 0
for m in pairs(blocked_all) do if m ~= me then blocked = blocked + 1 end end
if ARGV[7] == '1' and blocked_all[me] == nil then
  -- newly held back: members keeping releases for their next call send them now
  redis.call('HSET', KEYS[4], me, 1)
  redis.call('PUBLISH', ARGV[8], 'blocked:' .. me)
elseif ARGV[7] ~= '1' and blocked_all[me] ~= nil then
  redis.call('HDEL', KEYS[4], me)
end
local waits_now = 0
for _, pc in ipairs(pairs_of(ARGV[9])) do waits_now = waits_now + pc[2] end
local function keep(key, stored, value)
  if value == (stored or '') then return end
  if value ~= '' then redis.call('HSET', key, me, value) else redis.call('HDEL', key, me) end
end
keep(KEYS[5], demand_all[me], ARGV[9])
keep(KEYS[6], bands_all[me], ARGV[10])
keep(KEYS[8], tenants_all[me], ARGV[12])
local fair = {}
for m, text in pairs(tenants_all) do
  if m ~= me and text ~= '' then fair[#fair + 1] = text end
end
-- eviction orders to other members: merged with any they have not read yet, then told
for m, below, n in string.gmatch(ARGV[11], '([^|;]+)|(-?%d+)|(%d+)') do
  local old = redis.call('HGET', KEYS[7], m)
  local b, c = tonumber(below), tonumber(n)
  if old then
    local ob, oc = string.match(old, '(-?%d+):(%d+)')
    b, c = math.max(b, tonumber(ob)), c + tonumber(oc)
  end
  redis.call('HSET', KEYS[7], m, b .. ':' .. c)
  redis.call('PUBLISH', ARGV[8], 'evict:' .. m)
end
local mine = redis.call('HGET', KEYS[7], me) or ''
if mine ~= '' then redis.call('HDEL', KEYS[7], me) end
-- the others' running requests in bands below 0: where an eviction order can go
local victims = {}
for m, text in pairs(bands_all) do
  if m ~= me then
    for _, pc in ipairs(pairs_of(text)) do
      if pc[1] < 0 and pc[2] > 0 then victims[#victims + 1] = m .. '|' .. pc[1] .. '|' .. pc[2] end
    end
  end
end
local freed = held + granted < before or #dead > 0 or waits_now < waited_before
if freed and blocked > 0 then redis.call('PUBLISH', ARGV[8], me) end
local waiting_text = {}
for q, c in pairs(waiting) do waiting_text[#waiting_text + 1] = q .. ':' .. c end
return {granted, others, live, blocked, table.concat(by_band, ','),
  table.concat(waiting_text, ','), table.concat(victims, ';'), mine, table.concat(fair, ';')}
"""

_LEAVE = """
redis.call('ZREM', KEYS[1], ARGV[1])
for k = 2, 8 do redis.call('HDEL', KEYS[k], ARGV[1]) end
if redis.call('HLEN', KEYS[4]) > 0 then redis.call('PUBLISH', ARGV[2], ARGV[1]) end
return 1
"""


def replica_id() -> str:
    """This process's member name: host and pid for people, a random tail so a restarted
    process with the same pid is a new member."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"


_KEYS = ("expiry", "held", "info", "blocked", "waiting", "bands", "orders", "tenants")


def group_keys(group: str) -> tuple[str, ...]:
    """The keys of ``group`` (expiry, held, info, blocked, waiting, bands, orders, tenants),
    in one hash slot."""
    base = f"sluiceway:replicas:{{{group}}}"
    return tuple(f"{base}:{name}" for name in _KEYS)


def freed_channel(group: str) -> str:
    """Where a call that freed room tells the members holding demand back."""
    return f"sluiceway:replicas:{{{group}}}:freed"


@dataclass(frozen=True, slots=True)
class Victims:
    """Requests another member runs in a band below 0: where an eviction order can go."""

    member: str
    band: int
    count: int


@dataclass(frozen=True, slots=True)
class EvictionOrder:
    """``count`` of ``member``'s running requests in bands below ``below`` (and below 0) are
    to be evicted, lowest band and newest first."""

    member: str
    below: int
    count: int


@dataclass(frozen=True, slots=True)
class SyncResult:
    """What one sync returned: ``granted`` of the ``want`` (``by_band``: per band);
    ``others``: what the other live members hold; ``live``: live members, this one included;
    ``waiting``: what the other members wait for, by band; ``victims``: their running
    requests in bands below 0; ``order``: an eviction order for this member, if one came;
    ``blocked``: other members holding demand back (they want to hear of freed room);
    ``demands``: their waiting demand per band, with usage and tenants."""

    granted: int
    others: int
    live: int
    blocked: int = 0
    by_band: Mapping[int, int] = field(default_factory=dict)
    waiting: Mapping[int, int] = field(default_factory=dict)
    victims: tuple[Victims, ...] = ()
    order: EvictionOrder | None = None
    demands: tuple[BandDemand, ...] = ()


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
        want: int | Mapping[int, int] = 0,
        cap: int = UNBOUNDED,
        ttl: float,
        info: Mapping[str, Any] | None = None,
        blocked: bool = False,
        waiting: Mapping[int, int] | None = None,
        bands: Mapping[int, int] | None = None,
        orders: Sequence[EvictionOrder] = (),
        demands: Sequence[BandDemand] = (),
    ) -> SyncResult:
        """Renew ``member`` for ``ttl`` seconds holding ``held``, grant up to ``want`` more (a
        number, or a number per band: higher bands first, and never room the others wait
        for in a higher band) while the group's total stays within ``cap``; one round trip.

        ``blocked``: the member holds demand back for want of room (it is told on
        :attr:`channel` when room frees); ``waiting``: what it waits for, by band; ``bands``:
        what it holds, by band; ``orders``: evictions it asks of other members; ``demands``:
        its waiting demand per band with usage and tenants (for fairness between members)."""
        wants = want if isinstance(want, Mapping) else ({0: want} if want else {})
        args: list[str | int] = [member, held, _pairs(wants), cap, max(1, round(ttl * 1000))]
        args.append("" if info is None else json.dumps(dict(info), sort_keys=True))
        args += ["1" if blocked else "0", self.channel, _pairs(waiting), _pairs(bands)]
        args.append(";".join(f"{o.member}|{o.below}|{o.count}" for o in orders if o.count > 0))
        args.append(encode(demands))
        reply = await self._sync(keys=list(self.keys), args=args)
        granted, others, live, blocked, by_band, waits, victims, mine, fair = reply
        order = None
        if mine:
            below, count = (int(x) for x in str(mine).split(":"))
            order = EvictionOrder(member, below, count)
        return SyncResult(
            int(granted),
            int(others),
            int(live),
            int(blocked),
            _parse(by_band),
            _parse(waits),
            tuple(_victims(victims)),
            order,
            decode(str(fair or "")),
        )

    async def leave(self, member: str) -> None:
        """Remove ``member`` now (a clean shutdown frees its share at once)."""
        await self._leave(keys=list(self.keys), args=[member, self.channel])

    async def members(self) -> list[Replica]:
        """Live members (expiry not passed), by name."""
        expiry_key, held_key, info_key = self.keys[:3]
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


def _pairs(counts: Mapping[int, int] | None) -> str:
    return ",".join(f"{p}:{c}" for p, c in sorted((counts or {}).items()) if c > 0)


def _parse(text: Any) -> dict[int, int]:
    out: dict[int, int] = {}
    for pair in str(text or "").split(","):
        if pair:
            p, c = pair.split(":")
            out[int(p)] = out.get(int(p), 0) + int(c)
    return out


def _victims(text: Any) -> list[Victims]:
    out = []
    for part in str(text or "").split(";"):
        if part:
            member, band, count = part.rsplit("|", 2)
            out.append(Victims(member, int(band), int(count)))
    return out


def _info(raw: str | None) -> Mapping[str, Any]:
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {"unreadable": raw}
    return value if isinstance(value, dict) else {"unreadable": raw}
