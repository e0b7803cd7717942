"""The demo's clients: requests sent to the coordinator the way the guide's clients send them.

``enqueue`` queues a request (202) under a chosen ``x-request-id``; ``wait`` holds the
connection until the model's answer (re-attaching to an enqueued request with the same id);
``live`` is a streamed passthrough request, timed to its first token.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import aiohttp

from sluiceway.clock import Clock
from sluiceway.wire.headers import ASYNC_MODE, TENANT

__all__ = ["Client", "LiveAnswer"]

MODEL = "sim-model"


@dataclass(frozen=True)
class LiveAnswer:
    """A streamed answer: status, seconds to the first token and to the end (scaled)."""

    status: int
    ttft: float
    e2e: float
    reason: str


def _body(max_tokens: int, prompt: str, *, stream: bool = False) -> dict[str, Any]:
    return {"model": MODEL, "prompt": prompt, "max_tokens": max_tokens, "stream": stream}


class Client:
    """One HTTP session to the coordinator's URL; times are the stack's scaled clock."""

    def __init__(self, url: str, clock: Clock) -> None:
        self.url = url
        self.clock = clock
        limits = aiohttp.TCPConnector(limit=0)
        self.http = aiohttp.ClientSession(connector=limits, timeout=aiohttp.ClientTimeout(600))

    async def aclose(self) -> None:
        await self.http.close()

    async def enqueue(self, tenant: str, request_id: str, max_tokens: int = 32) -> int:
        headers = {TENANT: tenant, ASYNC_MODE: "enqueue", "x-request-id": request_id}
        body = _body(max_tokens, f"summarize report {request_id}")
        async with self.http.post(self._completions, json=body, headers=headers) as r:
            await r.read()
            return r.status

    async def wait(self, tenant: str, request_id: str, max_tokens: int = 32) -> tuple[int, float]:
        """The status of the model's answer and the scaled time it arrived."""
        headers = {TENANT: tenant, ASYNC_MODE: "wait", "x-request-id": request_id}
        body = _body(max_tokens, f"summarize report {request_id}")
        async with self.http.post(self._completions, json=body, headers=headers) as r:
            await r.read()
            return r.status, self.clock.now()

    async def live(
        self, tenant: str, max_tokens: int = 8, *, objective: str | None = None
    ) -> LiveAnswer:
        """A streamed passthrough request (``objective``: a header the coordinator replaces)."""
        headers = {TENANT: tenant, ASYNC_MODE: "passthrough"}
        if objective:
            headers["x-llm-d-inference-objective"] = objective
        return await self._stream(headers, max_tokens)

    async def _stream(self, headers: dict[str, str], max_tokens: int) -> LiveAnswer:
        started = self.clock.now()
        first: float | None = None
        body = _body(max_tokens, "hello", stream=True)
        async with self.http.post(self._completions, json=body, headers=headers) as r:
            reason = r.headers.get("x-llm-d-request-dropped-reason", "")
            async for line in r.content:
                if first is None and line.startswith(b"data: {"):
                    first = self.clock.now()
            end = self.clock.now()
            return LiveAnswer(r.status, (first or end) - started, end - started, reason)

    @property
    def _completions(self) -> str:
        return self.url + "/v1/completions"
