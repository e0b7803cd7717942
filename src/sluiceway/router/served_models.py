"""What each endpoint serves, learned from its ``GET /v1/models``, and what the router answers
from it.

A pool may mix models (and LoRA adapters, which vLLM lists in ``/v1/models`` beside their base
model, with a ``parent``): each endpoint's model ids limit the requests it is picked for
(:meth:`EndpointPool.set_models`). They are asked for when an endpoint joins or turns healthy
and again every ``interval``; a fetch that fails keeps what was known, so a slow ``/v1/models``
never makes an endpoint take every model again.

From what was learned: ``GET /v1/models`` lists every model a healthy endpoint serves, one
entry per id (not one endpoint's answer proxied), and a request for a model no endpoint serves
is answered 404 before it queues, as vLLM answers an unknown model.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Sequence
from typing import Any

import aiohttp
import orjson

from sluiceway.clock import Clock
from sluiceway.router.outcomes import error_answer, model_not_found
from sluiceway.router.pool import EndpointPool, PoolMember
from sluiceway.wire import headers as h
from sluiceway.wire.answer import Answer

__all__ = ["ServedModels", "model_list", "read_model_cards", "unserved_answer"]

log = logging.getLogger(__name__)

Card = dict[str, Any]


def read_model_cards(body: bytes) -> dict[str, Card] | None:
    """The cards of an OpenAI model list by id, adapters included; None when ``body`` is not
    such a list (the endpoint's models stay as they were)."""
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, list):
        return None
    cards: dict[str, Card] = {}
    for card in data:
        if isinstance(card, dict) and isinstance(card.get("id"), str) and card["id"]:
            cards.setdefault(card["id"], card)
    return cards


def model_list(cards: Iterable[Card]) -> bytes:
    """An OpenAI model list of ``cards``."""
    return orjson.dumps({"object": "list", "data": list(cards)})


def unserved_answer(model: str, members: Iterable[PoolMember]) -> Answer | None:
    """The answer for a request for ``model`` that no healthy endpoint may serve, or None.

    404 (vLLM's wording) when no endpoint lists it; 503 ``rejected-no-endpoints`` when only
    endpoints that are down list it (they may come back). None when some healthy endpoint lists
    it or has not told its models yet, when no model is named, or when no endpoint is healthy
    at all (flow control's no-endpoints regime decides then)."""
    if not model:
        return None
    members = [m for m in members if not m.draining]
    healthy = [m for m in members if m.healthy]
    if not healthy or any(m.serves(model) for m in healthy):
        return None
    if any(m.models is not None and model in m.models for m in members):
        return error_answer(503, "no model server endpoints available", h.REASON_NO_ENDPOINTS)
    return model_not_found(model)


class ServedModels:
    """Learns each endpoint's models into the pool; keeps their cards for ``/v1/models``."""

    def __init__(
        self, pool: EndpointPool, clock: Clock, *, interval: float, timeout: float
    ) -> None:
        self.pool = pool
        self._clock = clock
        self._interval = interval
        self._timeout = timeout
        self._cards: dict[str, dict[str, Card]] = {}
        self._asked: set[str] = set()  # healthy endpoints asked since they turned healthy
        self._failing: set[str] = set()
        self._wake = asyncio.Event()

    def listing(self) -> bytes:
        """``GET /v1/models``: one card per model a healthy endpoint serves."""
        cards: dict[str, Card] = {}
        for member in self.pool.healthy:
            for model_id, card in self._cards.get(member.url, {}).items():
                cards.setdefault(model_id, card)
        return model_list(cards[i] for i in sorted(cards))

    def pool_changed(self) -> None:
        """The healthy set changed: an endpoint that (re)turned healthy is asked at once."""
        healthy = {m.url for m in self.pool.healthy}
        self._asked &= healthy
        for url in [u for u in self._cards if u not in self.pool.members]:
            del self._cards[url]
        self._failing &= set(self.pool.members)
        if healthy - self._asked:
            self._wake.set()

    async def learn(self, session: aiohttp.ClientSession, urls: Sequence[str]) -> None:
        """Ask each of ``urls`` for its models, concurrently. One not taking traffic yet is
        asked again once it does (a server that is starting may not answer yet)."""
        found = await asyncio.gather(*(self._fetch(session, url) for url in urls))
        for url, cards in zip(urls, found, strict=True):
            member = self.pool.members.get(url)
            if member is None:
                continue
            if member.healthy and not member.draining:
                self._asked.add(url)
            if cards is None:
                continue
            models = frozenset(cards)
            if member.models != models:
                log.info("endpoint %s serves %s", url, ", ".join(sorted(models)) or "no model")
            self._cards[url] = cards
            self.pool.set_models(url, models)

    async def run(self, session: aiohttp.ClientSession) -> None:
        """Ask endpoints that turned healthy at once, and every healthy one each interval."""
        every = self._interval
        full_at = self._clock.monotonic() + every
        while True:
            await self._wait(full_at - self._clock.monotonic() if every > 0 else None)
            self._wake.clear()
            healthy = [m.url for m in self.pool.healthy]
            due = [u for u in healthy if u not in self._asked]
            if every > 0 and self._clock.monotonic() >= full_at:
                due, full_at = healthy, self._clock.monotonic() + every
            with contextlib.suppress(Exception):
                await self.learn(session, due)

    async def _wait(self, seconds: float | None) -> None:
        """Until a wake-up, or ``seconds`` (scaled; None: no limit) pass."""
        woken = asyncio.ensure_future(self._wake.wait())
        waits: set[asyncio.Future[Any]] = {woken}
        if seconds is not None:
            waits.add(asyncio.ensure_future(self._clock.sleep(seconds)))
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()

    async def _fetch(self, session: aiohttp.ClientSession, url: str) -> dict[str, Card] | None:
        wall = aiohttp.ClientTimeout(total=self._clock.to_wall(self._timeout))
        cards: dict[str, Card] | None = None
        problem = ""
        try:
            async with session.get(f"{url}/v1/models", timeout=wall) as resp:
                body = await resp.read()
                cards = read_model_cards(body) if resp.status == 200 else None
                problem = f"HTTP {resp.status}" if resp.status != 200 else "not a model list"
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            problem = f"{type(exc).__name__}: {exc}"
        if cards is None and url not in self._failing:
            self._failing.add(url)
            log.warning("endpoint %s: GET /v1/models failed (%s); models kept", url, problem)
        elif cards is not None and url in self._failing:
            self._failing.discard(url)
            log.info("endpoint %s: GET /v1/models answers again", url)
        return cards
