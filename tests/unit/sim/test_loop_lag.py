"""The loop-lag probe reports how late a timer ran when the loop was blocked."""

from __future__ import annotations

import asyncio
import time

from sluiceway.sim.loop_lag import LoopLagProbe


async def test_a_blocked_loop_shows_as_lag() -> None:
    probe = LoopLagProbe(interval=0.01, window=50)
    assert probe.lag == 0.0
    probe.start()
    time.sleep(0.15)  # noqa: ASYNC251 - the blocked loop is what is measured
    fired = asyncio.Event()
    asyncio.get_running_loop().call_later(0.02, fired.set)
    await fired.wait()
    probe.stop()
    assert probe.lag >= 0.1
