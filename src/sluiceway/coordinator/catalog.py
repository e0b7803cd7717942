"""The models the gateway serves, so a queued request for none of them is refused at the door.

When no route names a model, every model is accepted, and a passthrough request for one the
model servers lack is refused by them at once (404). A queued one would wait in its queue first
and fail later, so wait and enqueue requests are checked against the gateway's ``GET
/v1/models`` list: a model it does not list is 404 ``model_not_found`` before anything is
queued. The list is read at most every ``ttl`` wall seconds (30 s), and again, at most every
``recheck`` seconds (1 s), when a model is asked for that it lacks (a model just deployed). A
list that cannot be read within 5 s (the gateway down, an error answer, an empty list) refuses
nothing: the request is queued as it was before this check, and one warning says why.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Final

from sluiceway.coordinator.answers import RequestRejected
from sluiceway.coordinator.forwarding import Forwarder, ForwardFailed
from sluiceway.router.served_models import read_model_cards

__all__ = ["ModelCatalog", "listed_models"]

log = logging.getLogger(__name__)

TTL_SECONDS: Final = 30.0
RECHECK_SECONDS: Final = 1.0
READ_TIMEOUT_SECONDS: Final = 5.0
_MAX_LIST_BYTES: Final = 1024 * 1024
_HEADERS: Final = (("accept", "application/json"),)


def listed_models(body: bytes) -> frozenset[str] | None:
    """The model ids of an OpenAI ``/v1/models`` answer (read as the router reads its
    endpoints'); None when it is not one or lists none (pure)."""
    cards = read_model_cards(body)
    return frozenset(cards) if cards else None


class ModelCatalog:
    """The gateway's model list, read through the coordinator's forwarder and kept a while."""

    def __init__(
        self,
        forwarder: Forwarder,
        *,
        ttl: float = TTL_SECONDS,
        recheck: float = RECHECK_SECONDS,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self._forwarder = forwarder
        self._ttl = ttl
        self._recheck = recheck
        self._now = now
        self._models: frozenset[str] | None = None
        self._read_at = -float("inf")
        self._lock = asyncio.Lock()
        self._failing = False

    async def check(self, model: str) -> None:
        """RequestRejected (404) when the gateway's list was read and lacks ``model``."""
        models = await self._current(self._ttl)
        if models is not None and model not in models:
            models = await self._current(self._recheck)
        if models is not None and model not in models:
            raise RequestRejected(404, "model_not_found", f"model {model!r} is not served here")

    async def _current(self, max_age: float) -> frozenset[str] | None:
        async with self._lock:  # one read at a time; the others use its answer
            if self._now() - self._read_at >= max_age:
                try:
                    read = await asyncio.wait_for(self._read(), READ_TIMEOUT_SECONDS)
                except TimeoutError:
                    read = "no answer within 5 s"
                self._models = self._noted(read)
                self._read_at = self._now()
            return self._models

    async def _read(self) -> frozenset[str] | str:
        """The listed models, or why there are none to go by."""
        try:
            reply = await self._forwarder.open("GET", "/v1/models", _HEADERS, b"")
        except ForwardFailed as exc:
            return str(exc)
        try:
            body = b""
            async for chunk in reply.chunks():
                body += chunk
                if len(body) > _MAX_LIST_BYTES:
                    return "the model list is over 1 MiB"
        finally:
            await reply.aclose()
        models = listed_models(body) if reply.status == 200 else None
        return models or f"GET /v1/models answered {reply.status} without models"

    def _noted(self, read: frozenset[str] | str) -> frozenset[str] | None:
        """The models to go by; one warning when the list stops being readable."""
        if isinstance(read, str):
            if not self._failing:
                log.warning("cannot read the gateway's models (%s): queued models unchecked", read)
            self._failing = True
            return None
        self._failing = False
        return read
