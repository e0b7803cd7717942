"""RPC batching: one request per key per loop turn, each caller its own outcome."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from sluiceway.broker.pubsub_batch import RpcBatcher


async def test_calls_of_one_turn_share_a_request_per_key() -> None:
    sent: list[tuple[str, list[int]]] = []

    async def send(key: str, items: Sequence[int]) -> list[int]:
        sent.append((key, list(items)))
        return [i * 10 for i in items]

    batcher: RpcBatcher[str, int] = RpcBatcher(send, max_items=2)
    replies = await asyncio.gather(
        *(batcher.submit("a", i) for i in range(3)), batcher.submit("b", 9)
    )
    assert replies == [0, 10, 20, 90]
    assert sorted(sent) == [("a", [0, 1]), ("a", [2]), ("b", [9])]


async def test_a_failed_request_fails_each_of_its_callers() -> None:
    async def send(key: str, items: Sequence[int]) -> None:
        raise ConnectionError("down")

    batcher: RpcBatcher[str, int] = RpcBatcher(send)
    results = await asyncio.gather(
        batcher.submit("a", 1), batcher.submit("a", 2), return_exceptions=True
    )
    assert all(isinstance(r, ConnectionError) for r in results)
    with pytest.raises(ConnectionError):
        await batcher.submit("a", 3)
