"""--wait-for-broker: keep trying until the broker answers, or fail after the bound."""

from __future__ import annotations

import pytest

from sluiceway.broker.wait import wait_for_broker
from sluiceway.errors import BrokerError


class _Opened:
    closed = False

    async def aclose(self) -> None:
        self.closed = True


async def test_waits_until_the_broker_answers() -> None:
    attempts: list[int] = []
    opened = _Opened()

    async def open_broker() -> _Opened:
        attempts.append(1)
        if len(attempts) < 3:
            raise BrokerError("redis unreachable at open")
        return opened

    await wait_for_broker(open_broker, within=10, what="redis://h", interval=0.001)
    assert len(attempts) == 3 and opened.closed


async def test_gives_up_after_the_bound_naming_the_broker() -> None:
    async def never() -> _Opened:
        raise BrokerError("refused")

    with pytest.raises(BrokerError, match=r"redis://h still unreachable after 0\.05 s"):
        await wait_for_broker(never, within=0.05, what="redis://h", interval=0.01)
