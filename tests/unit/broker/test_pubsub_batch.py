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


async def test_items_wait_for_a_free_request_and_then_go_out_together() -> None:
    sent: list[list[int]] = []
    gate = asyncio.Event()

    async def send(key: str, items: Sequence[int]) -> None:
        sent.append(list(items))
        await gate.wait()

    batcher: RpcBatcher[str, int] = RpcBatcher(send, max_in_flight=1)
    first = asyncio.ensure_future(batcher.submit("a", 0))
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    later = [asyncio.ensure_future(batcher.submit("a", i)) for i in (1, 2)]
    await asyncio.sleep(0)
    more = asyncio.ensure_future(batcher.submit("a", 3))
    await asyncio.sleep(0)
    assert sent == [[0]]  # one request in flight; the rest wait
    gate.set()
    await asyncio.gather(first, *later, more)
    assert sent == [[0], [1, 2, 3]]
