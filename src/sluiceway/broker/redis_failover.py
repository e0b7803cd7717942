"""Following a Sentinel failover at once.

A demoted master keeps accepting writes until the sentinels reconfigure it, seconds after the
switch; a processor still connected to it claims there what the new master holds pending, and
the model runs those requests twice. So a client built on sentinels does not wait for the old
master to refuse a write: :class:`FailoverWatch` listens to every sentinel and, as soon as the
leader selects the replica it will promote (``+selected-slave``; ``+switch-master`` for a
switch begun unseen), points the pool at that replica (:class:`FollowingPool`: sentinels that
have not heard yet would name the old master) and disconnects every connection, in use or
idle. Writes fail (READONLY, retried) for the moment the promotion takes rather than land on a
master about to be demoted; an aborted failover points the pool back. A command cut in flight
is sent once more on a fresh connection (the broker's ``_io``), and fencing settles the
claims in flight at the switch. One WARNING per switch.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from redis.asyncio.sentinel import MasterNotFoundError, SentinelConnectionPool
from redis.exceptions import RedisError

__all__ = ["CHANNELS", "FailoverWatch", "FollowingPool", "watch_failovers"]

_log = logging.getLogger(__name__)

SWITCH_CHANNEL = "+switch-master"
SELECTED = "+selected-slave"
ABORT = "-failover-abort-"
CHANNELS = (
    SELECTED,
    SWITCH_CHANNEL,
    *(f"{ABORT}{why}" for why in ("not-elected", "no-good-slave", "slave-timeout")),
)
_BACKOFF = (0.1, 2.0)  # wall seconds between rounds over the sentinels: first, at most


class FollowingPool(SentinelConnectionPool):
    """A master's pool that trusts the newest switch announced (``announced``) over sentinels
    that still name the old master, until they agree."""

    announced: tuple[str, int] | None = None

    async def get_master_address(self) -> tuple[str, int]:
        try:
            found = await self.sentinel_manager.discover_master(self.service_name)
            address = (str(found[0]), int(found[1]))
        except MasterNotFoundError:  # mid-failover, no sentinel names a healthy master
            if self.announced is None:
                raise
            address = self.announced
        if self.announced is not None:
            if address == self.announced:
                self.announced = None  # the sentinels agree now
            else:
                address = self.announced
        if self.master_address != address:
            self.master_address = address
            await self.disconnect(inuse_connections=False)
        return address


class FailoverWatch:
    """One listener per sentinel for the switch of a client's master."""

    def __init__(self, client: Any, sentinels: list[Any], master_name: str) -> None:
        self._client = client
        self._name = master_name
        self.switches = 0
        self._closing = False
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._run(sentinel), name="failover-watch") for sentinel in sentinels
        ]

    async def _run(self, sentinel: Any) -> None:
        pause = _BACKOFF[0]
        while not self._closing:  # redis-py may turn a cancelled read into a connection error
            try:
                await self._listen(sentinel)
            except (RedisError, OSError) as exc:
                _log.debug("sentinel %s lost (%s); listening again", sentinel, exc)
            await asyncio.sleep(pause)
            pause = min(pause * 2, _BACKOFF[1])

    async def _listen(self, sentinel: Any) -> None:
        pubsub = sentinel.pubsub()
        try:
            await pubsub.subscribe(*CHANNELS)
            while not self._closing:
                message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
                if message is not None and message["type"] == "message":
                    await self._on_event(_text(message["channel"]), _text(message["data"]).split())
        finally:
            await pubsub.aclose()

    async def _on_event(self, channel: str, words: list[str]) -> None:
        """``+selected-slave slave <name> <ip> <port> @ <master> ...``: the leader is about to
        promote that replica, so nothing more may be written to the old master; ``+switch-master
        <master> <old ip> <old port> <new ip> <new port>``: the switch is done (a failover this
        client did not see begin); ``-failover-abort-*  master <master> ...``: back."""
        pool = self._client.connection_pool
        if channel == SELECTED and len(words) >= 6 and words[5] == self._name:
            await self._leave(pool, (words[2], int(words[3])), "is failing over to")
        elif channel == SWITCH_CHANNEL and len(words) == 5 and words[0] == self._name:
            await self._leave(pool, (words[3], int(words[4])), "moved to")
        elif channel.startswith(ABORT) and words[1:2] == [self._name]:
            await self._back(pool, channel.lstrip("-"))

    async def _back(self, pool: Any, why: str) -> None:
        """An aborted failover: the sentinels' master again."""
        if isinstance(pool, FollowingPool) and pool.announced is not None:
            pool.announced = None
            _log.warning("redis master %s: %s; back to the sentinels' master", self._name, why)
            await pool.disconnect(inuse_connections=True)

    async def _leave(self, pool: Any, new: tuple[str, int], how: str) -> None:
        """Point the pool at ``new`` and cut every connection to the old master (once a
        switch: the other sentinels announce the same)."""
        if isinstance(pool, FollowingPool):
            if pool.announced == new or pool.master_address == new:
                return
            pool.announced = new
        self.switches += 1
        _log.warning("redis master %s %s %s:%s: leaving the old one", self._name, how, *new)
        await pool.disconnect(inuse_connections=True)

    async def aclose(self) -> None:
        self._closing = True
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


def _text(value: object) -> str:
    """A sentinel's message part (bytes: the sentinels' connections do not decode)."""
    return value.decode() if isinstance(value, bytes) else str(value)


def watch_failovers(client: Any) -> FailoverWatch | None:
    """A watch for ``client`` when its master is found through sentinels, else None."""
    pool: Any = getattr(client, "connection_pool", None)
    manager = getattr(pool, "sentinel_manager", None)
    if manager is None:
        return None
    return FailoverWatch(client, manager.sentinels, str(pool.service_name))
