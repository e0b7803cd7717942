"""A broker double for blips: the memory broker whose chosen calls fail a given number of times
(``BrokerError``, as a Redis restart or a failover makes them fail), then work again."""

from __future__ import annotations

from collections import Counter

from sluiceway.broker.memory import MemoryBroker
from sluiceway.errors import BrokerError


class FlakyBroker(MemoryBroker):
    """``fail("peek_result", 2)``: the next two ``peek_result`` calls raise BrokerError."""

    def __init__(self) -> None:
        super().__init__()
        self._failures: Counter[str] = Counter()
        self.failed: Counter[str] = Counter()

    def fail(self, call: str, times: int) -> None:
        self._failures[call] = times

    def _trip(self, call: str) -> None:
        if self._failures[call] > 0:
            self._failures[call] -= 1
            self.failed[call] += 1
            raise BrokerError(f"redis {call} failed: Connection refused")

    async def peek_result(self, destination: str) -> str | None:
        self._trip("peek_result")
        return await super().peek_result(destination)

    async def wait_for_result(self, destination: str, block_for: float) -> bool:
        self._trip("wait_for_result")
        return await super().wait_for_result(destination, block_for)

    async def expire_result(self, destination: str, after: float) -> None:
        self._trip("expire_result")
        await super().expire_result(destination, after)

    async def is_pending(self, request_id: str) -> bool:
        self._trip("is_pending")
        return await super().is_pending(request_id)

    async def cancel(self, request_id: str, *, expire_after: float) -> bool:
        self._trip("cancel")
        return await super().cancel(request_id, expire_after=expire_after)
