"""The producer client: submit requests, cancel them, read their results.

Writes exactly the upstream envelope (``sluiceway.wire.envelope``) with a fresh
``request_token`` per submission and the ``request-active:<id>`` marker that makes cancellation
possible; a re-submitted id starts a new generation (an older generation's cancel marker no
longer applies). Works over any :class:`~sluiceway.broker.base.Broker`.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sluiceway.broker.base import CANCEL_MARKER_TTL_SECONDS, ActiveMarker, Broker
from sluiceway.clock import Clock, RealClock
from sluiceway.errors import WireError
from sluiceway.wire import (
    Envelope,
    Internal,
    RequestData,
    ResultRecord,
    decode_result,
    encode_envelope,
    mint_request_token,
)

__all__ = ["Producer", "Submitted", "request"]


def request(
    request_id: str,
    payload: Any,
    *,
    deadline: float,
    metadata: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    endpoint: str = "",
    created: float | None = None,
) -> RequestData:
    """A request to submit; ``deadline`` and ``created`` are Unix seconds."""
    return RequestData(
        id=request_id,
        deadline=deadline,
        created=int(created if created is not None else time.time()),
        payload=payload,
        metadata=dict(metadata or {}),
        headers=dict(headers or {}),
        endpoint=endpoint,
    )


@dataclass(frozen=True, slots=True)
class Submitted:
    """A submitted generation: its id, token and the queue it waits in."""

    id: str
    request_token: str
    queue: str


class Producer:
    """Submits to ``queue`` (default) and reads results from ``result_queue``.

    ``result_queue`` None leaves routing to the processor (the queue's or the default list);
    set it to give every request of this producer its own route (the request's own route wins).
    """

    def __init__(
        self,
        broker: Broker,
        *,
        queue: str = "request-sortedset",
        result_queue: str | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._broker = broker
        self._queue = queue
        self._result_queue = result_queue
        self._clock = clock or RealClock()

    def _envelope(
        self, data: RequestData, queue: str, token: str, result_queue: str | None
    ) -> Envelope:
        internal = Internal(
            request_token=token,
            request_queue_name=queue,
            result_queue_name=result_queue or self._result_queue or "",
        )
        return Envelope(data=data, internal=internal, request_kind="plain")

    def _check(self, data: RequestData, now: float) -> None:
        if not data.id:
            raise WireError("a request needs an id")
        if float(data.deadline) <= now:
            raise WireError(f"request {data.id}: deadline {data.deadline} is not in the future")

    async def submit(
        self, data: RequestData, *, queue: str | None = None, result_queue: str | None = None
    ) -> Submitted:
        """Enqueue one request at its deadline score; ``result_queue`` routes its result
        (overriding the producer's route)."""
        (submitted,) = await self.submit_many([data], queue=queue, result_queue=result_queue)
        return submitted

    async def submit_many(
        self,
        requests: Iterable[RequestData],
        *,
        queue: str | None = None,
        result_queue: str | None = None,
    ) -> list[Submitted]:
        """Enqueue many requests in one broker step."""
        target = queue or self._queue
        now = self._clock.now()
        entries: list[tuple[str, float]] = []
        markers: list[ActiveMarker] = []
        out: list[Submitted] = []
        for data in requests:
            self._check(data, now)
            token = mint_request_token()
            member = encode_envelope(self._envelope(data, target, token, result_queue))
            entries.append((member, float(data.deadline)))
            ttl = self._clock.to_wall(float(data.deadline) - now)
            markers.append(ActiveMarker(data.id, token, expire_after=ttl))
            out.append(Submitted(data.id, token, target))
        await self._broker.enqueue(target, entries, markers=markers)
        return out

    async def cancel(self, ids: Sequence[str]) -> dict[str, bool]:
        """Cancel the current generation of each id; False for unknown or finished ids."""
        ttl = self._clock.to_wall(CANCEL_MARKER_TTL_SECONDS)
        return {rid: await self._broker.cancel(rid, expire_after=ttl) for rid in ids}

    def _destination(self, result_queue: str | None) -> str:
        destination = result_queue or self._result_queue
        if not destination:
            raise ValueError("no result queue: pass result_queue or set one on the producer")
        return destination

    async def get_result(
        self, *, block_for: float = 0.0, result_queue: str | None = None
    ) -> ResultRecord | None:
        """The oldest result, waiting up to ``block_for`` wall seconds; None when none came."""
        raw = await self._broker.pop_result(self._destination(result_queue), block_for)
        return None if raw is None else decode_result(raw)

    async def results(
        self, *, block_for: float = 1.0, result_queue: str | None = None, follow: bool = True
    ) -> AsyncIterator[ResultRecord]:
        """Results as they arrive; without ``follow`` stop at the first empty wait."""
        while True:
            record = await self.get_result(block_for=block_for, result_queue=result_queue)
            if record is not None:
                yield record
            elif not follow:
                return
