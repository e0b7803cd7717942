"""The router's capacity leases: one batched, renewed sync with the pool's replica set.

Each request a dispatch cycle sends upstream first holds a lease (:meth:`LeaseLedger.acquire`
resolves when the ledger granted it) and gives it back at its end
(:meth:`LeaseLedger.release`). One task talks to Redis, one call at a time: the acquires and
releases made while a call is out go together in the next one, so a busy router sends fewer
calls than it dispatches requests, and an idle one sends one call per acquire and per release.

Every call states the leases held now (absolute, see :mod:`~sluiceway.ledger.replicas`) and
renews them; without traffic a call goes out every third of the lease time. A replica that dies
stops renewing, and its leases are gone one lease time later.

Requests the ledger did not grant (another replica took the room first, or another replica
waits for it in a higher band) wait here, in order within their band, and are asked for again
at the next release, arrival or after ``retry`` seconds.

Each call also states what this replica holds and waits for, by band (``demand``, read from
the router at send time), so the others reserve room for its higher bands and can send it
eviction orders for its requests below 0; orders this replica gives go with its next call, and
one addressed to it comes back with its next call (``on_evict``), woken at once by the
channel. It also states, per band it waits in, its usage and tenants (``fair``), and keeps the
others' (:attr:`LeaseLedger.others_demand`) for sharing a band between tenants.

A replica whose queue is held back while others hold room says so (:attr:`LeaseLedger.blocked`
goes with its next call); a call of another replica that frees room then publishes on the
group's channel, and the held-back replica calls at once for the fresh count: freed room is
used within a round trip, without polling. While no replica is held back a release waits for
the next call (the next acquire, or the renewal): nobody needs the room yet, and requests that
arrive one at a time then cost one call each, not two. A replica that becomes held back
publishes that, and the releases kept back go out at once.

Spare leases: while no other replica holds demand back or waits, a replica keeps ``spare``
leases granted and unused (asked for after every real request, in a band below all others), so
a request takes one at once, with no call and no wait, and gives it back to the spares when it
ends. They count in the ledger like any lease (the pool's total stays within the cap); the
moment another replica wants room they go back with the next call.

Redis unreachable: acquires are granted at once and the router's view assumes a local share
(:func:`~sluiceway.ledger.share.LedgerView.others_for`); one line is logged on the way in and one
on the way out, and the first call that reaches Redis again states the leases held, which
rebuilds the ledger from the live replicas.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from redis.exceptions import RedisError

from sluiceway.clock import Clock
from sluiceway.errors import ConfigError
from sluiceway.ledger.fair_share import BandDemand
from sluiceway.ledger.replicas import (
    UNBOUNDED,
    EvictionOrder,
    ReplicaSet,
    SyncResult,
    Victims,
    replica_id,
)
from sluiceway.ledger.share import LedgerView
from sluiceway.ledger.waiters import LeaseWaiters

__all__ = ["SPARE_BAND", "LeaseLedger", "LedgerSettings"]

SPARE_BAND = -(2**31)  # spare leases are asked for below every real band

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LedgerSettings:
    """``url``: the Redis holding the ledger; ``lease``: scaled seconds a replica's leases
    outlive its last call; ``retry``: scaled seconds between asks while requests wait for room
    or Redis is away; ``spare``: leases kept granted and unused while no other replica wants
    room, so a dispatch needs no call (0: none)."""

    url: str
    lease: float = 3.0
    retry: float = 0.05
    spare: int = 2

    def __post_init__(self) -> None:
        if not self.url.startswith(("redis://", "rediss://", "unix://")):
            raise ConfigError(f"{self.url!r} is not a redis:// URL", field="--ledger")
        if self.lease <= 0:
            raise ConfigError("must be > 0", field="--ledger-lease")
        if self.retry <= 0 or self.retry >= self.lease:
            raise ConfigError("must be > 0 and below the lease time", field="--ledger-retry")


class LeaseLedger:
    """One replica's leases in its pool's replica set (``member`` names it there)."""

    def __init__(
        self,
        replicas: ReplicaSet,
        member: str,
        clock: Clock,
        settings: LedgerSettings,
        *,
        on_change: Callable[[], None] = lambda: None,
        role: str = "router",
        demand: Callable[[], Mapping[int, int]] = dict,
        on_evict: Callable[[EvictionOrder], None] = lambda order: None,
        fair: Callable[[], Sequence[BandDemand]] = tuple,
    ) -> None:
        self.replicas = replicas
        self.member = member
        self.settings = settings
        self.held = 0
        self.spare = 0  # granted, not in use
        self.bands: collections.Counter[int] = collections.Counter()  # held, by band
        self.cap = UNBOUNDED
        self.view = LedgerView()
        self.others_waiting: Mapping[int, int] = {}
        self.others_demand: tuple[BandDemand, ...] = ()
        self.victims: tuple[Victims, ...] = ()
        self.calls = 0
        self._clock = clock
        self._scale = float(getattr(clock, "scale", 1.0))
        self._on_change = on_change
        self._demand = demand
        self._fair = fair
        self._on_evict = on_evict
        self._orders: list[EvictionOrder] = []
        self._sent_bands: frozenset[int] = frozenset()
        self._waiting = LeaseWaiters()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._listener: asyncio.Task[None] | None = None
        self._subscribed = asyncio.Event()
        self._blocked = False
        self._others_blocked = 0  # as the last call saw it
        self._kept = False  # releases not told yet
        self._owns_client = False
        self._identity: Mapping[str, Any] = {}
        self._info: Mapping[str, Any] | None = None
        self._role_info(role)
        self.unreachable = 0  # times Redis was lost

    def _role_info(self, role: str) -> None:
        self._identity = {
            "role": role,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "started": round(time.time(), 3),
        }
        self._info = self._identity

    @property
    def waiting(self) -> int:
        """Requests waiting for a lease."""
        return len(self._waiting)

    def waiting_by_band(self) -> dict[int, int]:
        return self._waiting.counts()

    def acquire(self, band: int = 0) -> asyncio.Future[None]:
        """A lease for one request of ``band``: done when granted (at once while Redis is away
        and the share allows). Cancel it when the request ends first."""
        if self.spare > 0 and not len(self._waiting):
            self.spare -= 1
            self.held += 1
            self.bands[band] += 1
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            fut.set_result(None)
            if self.spare == 0:
                self._wake.set()  # ask for more with the next call
            return fut
        fut = self._waiting.add(band)
        if self.view.connected:
            self._wake.set()
        else:
            self._grant_locally()
        return fut

    def release(self, band: int = 0) -> None:
        """A request of ``band`` holding a lease ended: told at once when some replica holds
        demand back, else with the next call."""
        self.held = max(0, self.held - 1)
        if self.bands[band] > 0:
            self.bands[band] -= 1
        if self.spare < self._spare_target():
            self.spare += 1  # kept granted for the next request: nothing to tell
        elif self._others_blocked or self._blocked or not self.view.connected:
            self._wake.set()
        else:
            self._kept = True

    def _spare_target(self) -> int:
        """Spare leases to keep: none while another replica wants room, or this one holds
        demand back, or Redis is away."""
        if self._others_blocked or self.others_waiting or self._blocked or self.waiting:
            return 0
        return self.settings.spare if self.view.connected else 0

    def order(self, orders: list[EvictionOrder]) -> None:
        """Ask other replicas to evict (sent with the next call, at once)."""
        if orders:
            self._orders += orders
            self._wake.set()

    def demand_changed(self, bands: frozenset[int]) -> None:
        """The bands this replica waits in; a band that appears or empties goes out at once
        (counts within a band ride on the next call)."""
        if bands != self._sent_bands:
            self._wake.set()

    @classmethod
    def connect(
        cls,
        settings: LedgerSettings,
        group: str,
        clock: Clock,
        *,
        on_change: Callable[[], None] = lambda: None,
        demand: Callable[[], Mapping[int, int]] = dict,
        on_evict: Callable[[EvictionOrder], None] = lambda order: None,
        fair: Callable[[], Sequence[BandDemand]] = tuple,
    ) -> LeaseLedger:
        """A ledger on its own Redis client (closed with it), named a new member of ``group``."""
        from sluiceway.broker.redis_connect import connect_redis

        redis = connect_redis(settings.url, max_connections=4)
        ledger = cls(
            ReplicaSet(redis, group),
            replica_id(),
            clock,
            settings,
            on_change=on_change,
            demand=demand,
            on_evict=on_evict,
            fair=fair,
        )
        ledger._owns_client = True
        return ledger

    @property
    def blocked(self) -> bool:
        return self._blocked

    def hold_back(self, blocked: bool) -> None:
        """This replica holds queued demand back (True) or not; a change goes out at once."""
        if blocked != self._blocked:
            self._blocked = blocked
            self._wake.set()

    def start(self) -> None:
        if self._task is None:
            loop = asyncio.get_running_loop()
            self._task = loop.create_task(self._run())
            self._listener = loop.create_task(self._listen())

    async def close(self) -> None:
        """Stop renewing and leave the set (the leases are free at once)."""
        tasks = [t for t in (self._task, self._listener) if t is not None]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)  # a cancel of close() itself still goes through
        self._task = self._listener = None
        self._waiting.cancel_all()
        with contextlib.suppress(RedisError, OSError, TimeoutError):
            async with asyncio.timeout(self._real(self._renew_every)):
                await self.replicas.leave(self.member)
        if self._owns_client:
            await self.replicas.redis.aclose()

    # ---- the one task --------------------------------------------------------------------
    @property
    def _renew_every(self) -> float:
        return self.settings.lease / 3

    def _real(self, scaled: float) -> float:
        return scaled / self._scale

    async def _run(self) -> None:
        # subscribed first: a message published before would be lost (bounded only by the
        # renewal) - e.g. another replica saying it is held back while this one keeps spares
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self._real(self._renew_every)):
                await self._subscribed.wait()
        while True:
            await self.sync_once()
            await self._next_turn()

    async def _next_turn(self) -> None:
        """Until an acquire or release, a retry (requests waiting or Redis away) or renewal."""
        due = self._renew_every
        if self.waiting or not self.view.connected:
            due = self.settings.retry
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self._real(due)):
                await self._wake.wait()

    async def sync_once(self) -> None:
        """One call: state the leases held, ask for the waiting requests, renew."""
        self._wake.clear()
        want = self._waiting.counts()
        target = self._spare_target()
        self.spare = min(self.spare, target)  # the rest go back with this call
        if self.spare < target:
            want[SPARE_BAND] = target - self.spare
        queued = dict(self._demand())
        demand = dict(queued)
        for band, count in want.items():
            if band != SPARE_BAND:
                demand[band] = demand.get(band, 0) + count
        orders, self._orders = self._orders, []
        try:
            async with asyncio.timeout(self._real(self._renew_every)):
                result = await self.replicas.sync(
                    self.member,
                    self.held + self.spare,
                    want=want,
                    cap=self.cap,
                    ttl=self._real(self.settings.lease),
                    info=self._info,
                    blocked=self._blocked or self.waiting > 0,  # denied requests want room
                    waiting=demand,
                    bands=self.bands,
                    orders=orders,
                    demands=self._fair(),
                )
        except (RedisError, OSError, TimeoutError) as exc:
            self._unreachable(exc)
            return
        # the bands queued in flow control (lease waiters wake the task by themselves)
        self._sent_bands = frozenset(b for b, c in queued.items() if c > 0)
        self._kept = False
        self._others_blocked = result.blocked
        self.calls += 1
        self._info = None  # written once per incarnation in the set
        self._granted(result)

    async def _listen(self) -> None:
        """Wake the task when another member frees room while this one holds demand back."""
        while True:
            pubsub = self.replicas.redis.pubsub()
            try:
                await pubsub.subscribe(self.replicas.channel)
                self._subscribed.set()
                async for message in pubsub.listen():
                    data = message.get("data")
                    if message.get("type") != "message" or data == self.member:
                        continue
                    told = data == f"evict:{self.member}" or (
                        (self._kept or self.spare > 0) and str(data).startswith("blocked:")
                    )
                    if told or (self._blocked and not str(data).startswith("blocked:")):
                        self._wake.set()
            except (RedisError, OSError):
                await self._clock.sleep(self._renew_every)  # the renewals carry on meanwhile
            finally:
                with contextlib.suppress(RedisError, OSError):
                    await pubsub.aclose()

    def _granted(self, result: SyncResult) -> None:
        # the set holds every grant now; one whose request ended meanwhile goes at the next call
        given = self._waiting.grant(result.by_band)
        self.held += sum(given.values())
        self.bands.update(given)
        spares = result.by_band.get(SPARE_BAND, 0)
        self.spare += spares
        if sum(given.values()) + spares < result.granted:
            self._wake.set()
        self.others_waiting = result.waiting
        self.others_demand = result.demands
        self.victims = result.victims
        if result.order is not None:
            self._on_evict(result.order)
        was = self.view
        self.view = was.synced(result.others, result.live, self._clock.now(), self.settings.lease)
        if not was.connected:
            log.info(
                "ledger %s reachable again: leases rebuilt (%d held here)",
                self.replicas.group,
                self.held,
            )
        if self.view != was:
            self._on_change()
        if self.spare > self._spare_target():
            self._wake.set()  # another replica wants room: the spares go back

    def _unreachable(self, exc: BaseException) -> None:
        self.spare = 0  # the ledger forgets them with this replica's entry
        was = self.view
        if was.connected:
            share = max(1, was.live)
            log.warning(
                "ledger %s unreachable (%s): admitting a local share, 1/%d of the pool",
                self.replicas.group,
                type(exc).__name__,
                share,
            )
            self.view = was.lost(self._clock.now(), self.settings.lease)
            self.unreachable += 1
            self._info = self._identity  # a restarted Redis lost it
            self._on_change()
        else:
            self.view = was.aged(self._clock.now())
            if self.view != was:
                self._on_change()
        self._grant_locally()

    def _grant_locally(self) -> None:
        """Away from Redis: grant waiting requests, higher bands first, while this replica's
        share allows (the others assumed as :meth:`LedgerView.others_for` says)."""
        now = self._clock.now()
        own = self.held + self.waiting
        others = self.view.others_for(own, now)
        room = self.cap - self.held - others

        def allowed(band: int) -> bool:
            nonlocal room
            room -= 1
            return room >= 0

        given = self._waiting.grant_while(allowed)
        self.held += sum(given.values())
        self.bands.update(given)
