"""The two clients: realtime closed loop (streamed, passthrough) and async open loop (wait
mode), both through the coordinator's headers at the router's address.

Realtime: k workers, each sending its next streamed completion as soon as the last ends, until
the stage's request count is reached. Async: a constant-rate open loop; a request whose answer
has not come within the client timeout is abandoned (the connection closed), as a load tool's
request timeout does, and recorded as not ok. Times are the shared clock's (scaled).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass, field

import aiohttp

from sluiceway.bench.isolation.records import RequestRecord
from sluiceway.clock import Clock

__all__ = ["AsyncLoad", "LoadTarget", "RealtimeLoad"]

MODE_HEADER = "x-llm-d-async-mode"
TENANT_HEADER = "x-llm-d-tenant"
REQUEST_ID = "x-request-id"


@dataclass(frozen=True)
class LoadTarget:
    """Where the clients send and what they ask for."""

    base_url: str
    model: str
    output_tokens: int = 128
    realtime_timeout: float = 120.0  # scaled seconds
    # router replicas: each request goes to the next, as a round-robin balancer sends them
    replicas: tuple[str, ...] = ()
    _turn: Iterator[int] = field(default_factory=itertools.count, compare=False, repr=False)

    def next_url(self) -> str:
        """Where the next request goes: ``base_url``, or the replicas in turn."""
        if not self.replicas:
            return self.base_url
        return self.replicas[next(self._turn) % len(self.replicas)]

    def body(self, prompt: str, *, stream: bool) -> dict[str, object]:
        body: dict[str, object] = {
            "model": self.model,
            "prompt": prompt,
            "max_tokens": self.output_tokens,
            "ignore_eos": True,
        }
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body


@dataclass
class RealtimeLoad:
    """k closed-loop workers; ``in_flight`` is read by the pool sampler."""

    target: LoadTarget
    clock: Clock
    session: aiohttp.ClientSession
    tag: str
    records: list[RequestRecord] = field(default_factory=list)
    in_flight: int = 0

    async def run(self, k: int, requests: int) -> None:
        ids = itertools.count()

        async def worker() -> None:
            while (n := next(ids)) < requests:
                await self._one(f"rt-{self.tag}-{n}")

        await asyncio.gather(*(worker() for _ in range(k)))

    async def _one(self, request_id: str) -> None:
        headers = {MODE_HEADER: "passthrough", TENANT_HEADER: "realtime", REQUEST_ID: request_id}
        body = self.target.body(f"{request_id} tell me about the river", stream=True)
        start = self.clock.now()
        first: float | None = None
        tokens, ok, status = 0, False, 0
        self.in_flight += 1
        try:
            limit = aiohttp.ClientTimeout(total=self.clock.to_wall(self.target.realtime_timeout))
            url = self.target.next_url() + "/v1/completions"
            async with self.session.post(url, json=body, headers=headers, timeout=limit) as resp:
                status = resp.status
                if status == 200:
                    first, tokens, ok = await self._read_stream(resp)
        except (aiohttp.ClientError, TimeoutError):
            ok = False
        finally:
            self.in_flight -= 1
        end = self.clock.now()
        ttft = None if first is None else first - start
        self.records.append(RequestRecord(start, end, ttft, tokens, ok, request_id, status=status))

    async def _read_stream(self, resp: aiohttp.ClientResponse) -> tuple[float | None, int, bool]:
        first: float | None = None
        tokens, done = 0, False
        async for raw in resp.content:
            line = raw.strip()
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if data == b"[DONE]":
                done = True
                continue
            event = json.loads(data)
            if "error" in event:
                return first, tokens, False
            if first is None and any(c.get("text") for c in event.get("choices") or ()):
                first = self.clock.now()
            usage = event.get("usage")
            if usage:
                tokens = int(usage.get("completion_tokens", 0))
        return first, tokens, done


@dataclass
class AsyncLoad:
    """An open loop at ``rate`` req/s in wait mode; ``abandoned`` maps each request the client
    gave up on to when it did."""

    target: LoadTarget
    clock: Clock
    session: aiohttp.ClientSession
    tag: str
    timeout: float
    records: list[RequestRecord] = field(default_factory=list)
    abandoned: dict[str, float] = field(default_factory=dict)
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    async def run(self, rate: float, stop: asyncio.Event) -> None:
        """Send until ``stop`` is set, then abandon whatever is still waiting."""
        interval = 1.0 / rate
        begin = self.clock.now()
        for n in itertools.count():
            due = begin + n * interval
            delay = due - self.clock.now()
            if delay > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.clock.to_wall(delay))
            if stop.is_set():
                break
            task = asyncio.create_task(self._one(f"as-{self.tag}-{n}"))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _one(self, request_id: str) -> None:
        headers = {MODE_HEADER: "wait", TENANT_HEADER: "batch", REQUEST_ID: request_id}
        body = self.target.body(f"{request_id} summarise the archive", stream=False)
        start = self.clock.now()
        tokens, ok, status = 0, False, 0
        try:
            limit = aiohttp.ClientTimeout(total=self.clock.to_wall(self.timeout))
            url = self.target.next_url() + "/v1/completions"
            async with self.session.post(url, json=body, headers=headers, timeout=limit) as resp:
                payload = await resp.read()
                status = resp.status
                if status == 200:
                    usage = json.loads(payload).get("usage") or {}
                    tokens, ok = int(usage.get("completion_tokens", 0)), True
        except (TimeoutError, asyncio.CancelledError):
            self._abandon(request_id, start)
            return
        except (aiohttp.ClientError, ValueError):
            ok = False
        end = self.clock.now()
        self.records.append(RequestRecord(start, end, None, tokens, ok, request_id, status=status))

    def _abandon(self, request_id: str, start: float) -> None:
        now = self.clock.now()
        self.abandoned[request_id] = now
        self.records.append(RequestRecord(start, now, None, 0, False, request_id, abandoned=True))
