"""Script calls coalesced per event-loop turn: one pipeline round trip for many acks.

Workers finishing in the same loop turn (typical under load: their upstream answers arrive
together) each ask for an ``EVALSHA``; :class:`ScriptBatcher` sends them in one
non-transactional pipeline on the next turn and hands every caller its own reply. Each script
stays its own atomic, owner-fenced step, so batching changes round trips, not guarantees: a
fenced ack in a batch fails alone, and a crash before the flush loses only unsent acks (their
claims are reclaimed, as if the process had died a moment earlier).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from redis.commands.core import AsyncScript
from redis.exceptions import NoScriptError

from sluiceway.broker.redis_connect import AnyRedis

__all__ = ["ScriptBatcher"]


@dataclass(slots=True)
class _Call:
    script: AsyncScript
    keys: Sequence[str]
    args: Sequence[Any]
    reply: asyncio.Future[Any] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class ScriptBatcher:
    """Runs script calls made in one loop turn as one pipeline (standalone Redis only)."""

    def __init__(self, client: AnyRedis) -> None:
        self._client = client
        self._queued: list[_Call] = []
        self._flushes: set[asyncio.Task[None]] = set()

    async def run(self, script: AsyncScript, keys: Sequence[str], args: Sequence[Any]) -> Any:
        """The script's reply; raises what the script call raised."""
        call = _Call(script, keys, args)
        if not self._queued:
            asyncio.get_running_loop().call_soon(self._flush)
        self._queued.append(call)
        return await call.reply

    def _flush(self) -> None:
        calls, self._queued = self._queued, []
        task = asyncio.create_task(self._send(calls))
        self._flushes.add(task)
        task.add_done_callback(self._flushes.discard)

    async def _send(self, calls: list[_Call]) -> None:
        try:
            replies = await self._replies(calls)
        except asyncio.CancelledError:  # the loop is shutting down: so are the callers
            for call in calls:
                call.reply.cancel()
            raise
        for call, reply in zip(calls, replies, strict=True):
            if call.reply.done():
                continue  # the caller was cancelled meanwhile
            if isinstance(reply, BaseException):
                call.reply.set_exception(reply)
            else:
                call.reply.set_result(reply)

    async def _replies(self, calls: list[_Call]) -> list[Any]:
        """One reply or exception per call."""
        try:
            if len(calls) == 1:
                return [await self._direct(calls[0])]
            return await self._pipelined(calls)
        except Exception as exc:  # the connection failed: every caller sees it
            return [exc] * len(calls)

    async def _direct(self, call: _Call) -> Any:
        try:
            return await call.script(keys=list(call.keys), args=list(call.args))
        except Exception as exc:
            return exc

    async def _pipelined(self, calls: list[_Call]) -> list[Any]:
        pipe = self._client.pipeline(transaction=False)
        for call in calls:
            pipe.evalsha(call.script.sha, len(call.keys), *call.keys, *call.args)
        replies: list[Any] = await pipe.execute(raise_on_error=False)
        for i, (call, reply) in enumerate(zip(calls, replies, strict=True)):
            if isinstance(reply, NoScriptError):  # script cache flushed: load and run alone
                replies[i] = await self._direct(call)
        return replies

    async def aclose(self) -> None:
        """Wait for flushes already started."""
        if self._flushes:
            await asyncio.gather(*self._flushes, return_exceptions=True)
