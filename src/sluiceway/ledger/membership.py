"""A processor's membership in the replica sets of its pools: who else serves them.

Each pool a processor serves is a group ``processor/<pool id>`` of
:mod:`~sluiceway.ledger.replicas` (one group per pool, not per process: pools are configured
apart, and a processor's share of one pool depends only on the processors serving it). Every
third of the lease (3 scaled seconds by default) the processor states, per group, the requests
it has in flight there (``held``) and renews itself; then it reads the group's live members and
takes its share, a :class:`~sluiceway.gates.pool_share.PoolShare` (live count, and its rank by
member name), which the gates split pool-wide targets by. A processor that dies stops renewing
and drops out one lease later; a clean stop leaves at once.

Redis unreachable: the last known share stays (the processors seen alive are presumably still
there and, like this one, on their last known share); one line is logged on the way in and one
on the way out. ``sluiceway status`` lists the members.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from redis.exceptions import RedisError

from sluiceway.clock import Clock
from sluiceway.gates.pool_share import SOLE, PoolShare
from sluiceway.ledger.replicas import ReplicaSet, replica_id

__all__ = ["DEFAULT_LEASE", "ReplicaMembership", "share_among"]

log = logging.getLogger(__name__)

DEFAULT_LEASE = 3.0  # scaled seconds a member outlives its last heartbeat
_FAILURES = (RedisError, OSError, TimeoutError)


def share_among(member: str, live: list[str]) -> PoolShare:
    """``member``'s share among the ``live`` member names (itself counted if missing: it has
    just renewed itself)."""
    names = sorted(set(live) | {member})
    return PoolShare(len(names), names.index(member))


@dataclass
class _Group:
    replicas: ReplicaSet
    held: Callable[[], int]
    info: Mapping[str, Any]
    share: PoolShare = SOLE


class ReplicaMembership:
    """One process (``member``) in the groups ``<role>/<name>`` it joined, on ``redis`` (a
    redis-py asyncio client with decoded replies)."""

    def __init__(
        self,
        redis: Any,
        clock: Clock,
        *,
        role: str = "processor",
        lease: float = DEFAULT_LEASE,
        member: str | None = None,
        on_change: Callable[[str], None] = lambda name: None,
    ) -> None:
        if lease <= 0:
            raise ValueError(f"lease must be > 0, got {lease}")
        self.redis = redis
        self.role = role
        self.lease = lease
        self.member = member or replica_id()
        self.connected = True
        self.unreachable = 0  # times Redis was lost
        self._clock = clock
        self.on_change = on_change  # called with a pool name when its share changed
        self._groups: dict[str, _Group] = {}
        self._task: asyncio.Task[None] | None = None
        self._identity = {
            "role": role,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "started": round(time.time(), 3),
        }

    def group(self, name: str) -> str:
        return f"{self.role}/{name}"

    def join(self, name: str, held: Callable[[], int]) -> None:
        """Take part in ``name``'s group from the next heartbeat, holding ``held()``."""
        info = {**self._identity, "pool": name}
        self._groups[name] = _Group(ReplicaSet(self.redis, self.group(name)), held, info)

    def share(self, name: str) -> PoolShare:
        """This process's share of pool ``name`` as last seen (alone until then)."""
        group = self._groups.get(name)
        return SOLE if group is None else group.share

    def sharer(self, name: str) -> Callable[[], PoolShare]:
        """:meth:`share` of ``name``, to read at each decision."""
        return lambda: self.share(name)

    # ---- the heartbeat -------------------------------------------------------------------
    def _wall(self, scaled: float) -> float:
        return self._clock.to_wall(scaled)

    async def sync_once(self) -> None:
        """One heartbeat: renew every group with what this process holds there, then read
        each group's live members for the shares."""
        try:
            for name, group in self._groups.items():
                async with asyncio.timeout(self._wall(self.lease / 3)):
                    await self._sync(name, group)
        except _FAILURES as exc:
            self._lost(exc)
            return
        if not self.connected:
            self.connected = True
            log.info("membership %s: Redis reachable again", self.role)

    async def _sync(self, name: str, group: _Group) -> None:
        ttl = self._wall(self.lease)
        await group.replicas.sync(self.member, group.held(), ttl=ttl, info=group.info)
        live = [replica.member for replica in await group.replicas.members()]
        share = share_among(self.member, live)
        if share != group.share:
            log.info(
                "membership %s: %d live, this one ranked %d",
                group.replicas.group,
                share.live,
                share.rank,
            )
            group.share = share
            self.on_change(name)

    def _lost(self, exc: BaseException) -> None:
        if self.connected:
            self.connected = False
            self.unreachable += 1
            log.warning(
                "membership %s: Redis unreachable (%s); keeping the last known shares",
                self.role,
                type(exc).__name__,
            )

    def start(self) -> None:
        if self._task is None and self._groups:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="membership")

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._wall(self.lease / 3))
            await self.sync_once()

    async def close(self) -> None:
        """Stop renewing and leave every group (a clean stop frees its share at once)."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.wait([self._task])  # a cancel of close() itself still goes through
            self._task = None
        for group in self._groups.values():
            with contextlib.suppress(*_FAILURES):
                async with asyncio.timeout(self._wall(self.lease / 3)):
                    await group.replicas.leave(self.member)
