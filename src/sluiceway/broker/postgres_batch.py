"""Acks made in one event-loop turn, sent to PostgreSQL as one statement.

Workers whose upstream answers arrive together each ask for an ack; :class:`AckBatcher` sends
them on the next loop turn as one ``sluiceway.ack_many`` call and hands every caller its own
answer. Each ack stays its own owner-fenced step (a fenced ack fails alone) and keeps its result
write in the same transaction as its claim's removal; the batch commits together, so a crash
before the statement loses only unsent acks, whose claims are reclaimed after their lease.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from sluiceway.broker.base import Claim, ResultWrite
from sluiceway.broker.postgres_db import PostgresDatabase
from sluiceway.broker.postgres_schema import SQL

__all__ = ["AckBatcher"]


@dataclass(slots=True)
class _Ack:
    claim: Claim
    result: ResultWrite
    reply: asyncio.Future[bool] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class AckBatcher:
    """Coalesces the acks of one loop turn into one statement."""

    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db
        self._queued: list[_Ack] = []
        self._flushes: set[asyncio.Task[None]] = set()

    async def ack(self, claim: Claim, result: ResultWrite) -> bool:
        """True when the claim was still ours and the result is written."""
        item = _Ack(claim, result)
        if not self._queued:
            asyncio.get_running_loop().call_soon(self._flush)
        self._queued.append(item)
        return await item.reply

    def _flush(self) -> None:
        batch, self._queued = self._queued, []
        task = asyncio.create_task(self._send(batch))
        self._flushes.add(task)
        task.add_done_callback(self._flushes.discard)

    async def _send(self, batch: list[_Ack]) -> None:
        try:
            rows = await self._db.fetch(SQL.ACK_MANY, *_columns(batch))
        except BaseException as exc:  # every caller sees the failure of its own ack
            for item in batch:
                if not item.reply.done():
                    item.reply.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        for item, row in zip(batch, rows, strict=True):
            if not item.reply.done():
                item.reply.set_result(bool(row[0]))

    async def aclose(self) -> None:
        """Wait for acks already sent."""
        if self._flushes:
            await asyncio.gather(*self._flushes, return_exceptions=True)


def _columns(batch: list[_Ack]) -> tuple[list[object], ...]:
    claims = [a.claim for a in batch]
    results = [a.result for a in batch]
    return (
        [c.queue for c in claims],
        [c.key.encode() for c in claims],
        [c.owner for c in claims],
        [r.destination for r in results],
        [r.record for r in results],
        [r.expire_after for r in results],
        [r.request_id for r in results],
        [r.request_token for r in results],
    )
