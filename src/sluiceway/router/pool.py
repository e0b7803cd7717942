"""The endpoint pool: model servers, their health, their models, and the router's in-flight
counts.

A health check (``GET <url>/health``) runs every ``interval`` scaled seconds; an endpoint that
fails it (or refuses a proxied connection) leaves the pool until a check succeeds again. Every
change of the healthy set calls ``on_change`` (the router runs a dispatch cycle).

Membership changes at run time (:meth:`EndpointPool.update`, fed by discovery): a new endpoint
takes traffic once its first health check passes; a removed one drains (no new requests, the
running ones finish) and leaves when its last request does. Each endpoint's models, once
learned (:meth:`EndpointPool.set_models`), limit what is picked for a request's model; an
endpoint whose models are not known yet may be picked for any model.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

import aiohttp

from sluiceway.clock import Clock
from sluiceway.flowcontrol.base import EndpointSnapshot
from sluiceway.router.load import InFlightLoad, LoadSource
from sluiceway.router.picker import PickerWeights, PrefixAffinity, Scored, pick_endpoint

__all__ = ["EndpointPool", "PoolMember"]

log = logging.getLogger(__name__)


@dataclass(slots=True, eq=False)
class PoolMember:
    """One model server. ``inflight`` / ``inflight_tokens``: the router's requests to it;
    ``models``: what it serves (None: not learned yet); ``draining``: removed from the pool,
    finishing its running requests."""

    url: str
    healthy: bool = False
    inflight: int = 0
    inflight_tokens: int = 0
    models: frozenset[str] | None = None
    draining: bool = False

    def serves(self, model: str) -> bool:
        return self.models is None or not model or model in self.models


class EndpointPool:
    def __init__(
        self,
        urls: Sequence[str],
        clock: Clock,
        *,
        load: LoadSource | None = None,
        weights: PickerWeights | None = None,
        affinity: bool = False,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        self.members = {u.rstrip("/"): PoolMember(u.rstrip("/")) for u in urls}
        self._clock = clock
        self._load = load or InFlightLoad()
        self._weights = weights or PickerWeights()
        self._affinity = PrefixAffinity() if affinity or self._weights.prefix else None
        self.on_change = on_change
        self._turn = 0
        self._healthy: list[PoolMember] = []

    @property
    def healthy(self) -> list[PoolMember]:
        """Members that take new requests: healthy and not draining."""
        return self._healthy

    def update(self, urls: Sequence[str]) -> list[str]:
        """Make the pool ``urls``: returns the new ones (to be health-checked; they take no
        traffic before a check passes). A removed member drains: it takes no new request and
        leaves when its last running one ends. A draining URL that comes back is kept."""
        wanted = dict.fromkeys(u.rstrip("/") for u in urls)
        added = [u for u in wanted if u not in self.members]
        for url in added:
            self.members[url] = PoolMember(url)
        removed = 0
        for url, member in list(self.members.items()):
            leaving = url not in wanted
            removed += leaving and not member.draining
            member.draining = leaving
            if leaving and member.inflight == 0:
                del self.members[url]
        if added or removed:
            log.info("pool: %d endpoints, %d new, %d removed", len(wanted), len(added), removed)
        self._refresh()
        return added

    def set_models(self, url: str, models: frozenset[str] | None) -> None:
        """What ``url`` serves (None: unknown, so any model may go there)."""
        member = self.members.get(url)
        if member is not None:
            member.models = models

    def candidates(self, model: str, avoid: Collection[str] = ()) -> list[PoolMember]:
        """Healthy members that may serve ``model``: those listing it, else those whose models
        are unknown (empty: no endpoint serves it). ``avoid``: URLs left out (failover)."""
        healthy = [m for m in self._healthy if m.url not in avoid] if avoid else self._healthy
        listed = [m for m in healthy if m.models is not None and m.serves(model)]
        return listed or [m for m in healthy if m.models is None]

    def models(self) -> list[str]:
        """Every model a healthy member lists, sorted."""
        return sorted({name for m in self._healthy for name in m.models or ()})

    def set_load_source(self, load: LoadSource) -> None:
        """Use another load source (e.g. scraped metrics) from now on."""
        self._load = load

    def snapshots(self, now: float) -> list[EndpointSnapshot]:
        """Healthy endpoints as the saturation detector sees them."""
        out = []
        for m in self._healthy:
            load = self._load.load(m.url, m.inflight, now)
            out.append(
                EndpointSnapshot(
                    m.url,
                    waiting=load.waiting,
                    kv_usage=load.kv_usage,
                    inflight_requests=m.inflight if load.requests is None else load.requests,
                    inflight_tokens=m.inflight_tokens,
                    scraped_at=load.scraped_at,
                )
            )
        return out

    def pick(
        self, prefix: bytes = b"", model: str = "", avoid: Collection[str] = ()
    ) -> PoolMember | None:
        """The endpoint for one request, or None when no healthy endpoint serves ``model``
        (``avoid``: URLs not to pick)."""
        members = self.candidates(model, avoid)
        if not members:
            return None
        self._turn += 1
        chosen = members[0] if len(members) == 1 else members[self._choose(members, prefix)]
        if self._affinity is not None:
            self._affinity.served(prefix, chosen.url)
        return chosen

    def acquire(self, member: PoolMember, tokens: int) -> None:
        member.inflight += 1
        member.inflight_tokens += tokens

    def release(self, member: PoolMember, tokens: int) -> None:
        member.inflight -= 1
        member.inflight_tokens -= tokens
        if member.draining and member.inflight == 0 and self.members.get(member.url) is member:
            del self.members[member.url]
            log.info("endpoint %s drained and left the pool", member.url)

    def mark(self, url: str, healthy: bool) -> None:
        """Record a health observation; calls ``on_change`` when the healthy set changes."""
        member = self.members.get(url)
        if member is None or member.healthy == healthy:
            return
        member.healthy = healthy
        log.info("endpoint %s is %s", url, "healthy" if healthy else "unhealthy")
        self._refresh()

    def _refresh(self) -> None:
        """Recompute the members taking traffic; ``on_change`` when that set changed."""
        before = self._healthy
        self._healthy = [m for m in self.members.values() if m.healthy and not m.draining]
        if self._healthy != before and self.on_change is not None:
            self.on_change()

    async def check_all(
        self, session: aiohttp.ClientSession, limit: float, urls: Sequence[str] | None = None
    ) -> None:
        """One health check of every endpoint (or of ``urls``), concurrently."""
        urls = list(self.members) if urls is None else list(urls)
        results = await asyncio.gather(*(self._check(session, u, limit) for u in urls))
        for url, ok in zip(urls, results, strict=True):
            self.mark(url, ok)

    async def run_checks(
        self, session: aiohttp.ClientSession, interval: float, limit: float
    ) -> None:
        """Check forever, every ``interval`` scaled seconds."""
        while True:
            await self._clock.sleep(interval)
            with contextlib.suppress(Exception):
                await self.check_all(session, limit)

    def _choose(self, members: list[PoolMember], prefix: bytes) -> int:
        now = self._clock.now()
        scored = []
        for m in members:
            load = self._load.load(m.url, m.inflight, now)
            scored.append(Scored(m.url, m.inflight, load.waiting or 0, load.kv_usage or 0.0))
        hint = self._affinity.get(prefix) if self._affinity is not None else None
        return pick_endpoint(scored, self._weights, affinity=hint, turn=self._turn)

    async def _check(self, session: aiohttp.ClientSession, url: str, limit: float) -> bool:
        wall = aiohttp.ClientTimeout(total=self._clock.to_wall(limit))
        try:
            async with session.get(f"{url}/health", timeout=wall) as resp:
                await resp.read()
                return resp.status == 200
        except (aiohttp.ClientError, OSError, TimeoutError):
            return False
