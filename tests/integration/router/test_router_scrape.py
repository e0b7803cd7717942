"""The router's endpoint load from the simulator's own /metrics page."""

from __future__ import annotations

import asyncio

from sluiceway.clock import RealClock
from sluiceway.router.load import ScrapedLoad
from sluiceway.sim import SimConfig, running_simulator


async def test_a_scrape_round_reads_the_simulators_waiting_count_and_kicks() -> None:
    clock = RealClock()
    async with running_simulator(SimConfig(max_num_seqs=1)) as sim:
        url = sim.urls[0]
        load = ScrapedLoad(clock)
        rounds = asyncio.Event()
        task = asyncio.create_task(load.run([url], interval=0.05, on_scrape=rounds.set))
        try:
            await asyncio.wait_for(rounds.wait(), 10)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        found = load.load(url, 7, clock.now())
        assert found.waiting == 0
        assert found.kv_usage is not None and 0.0 <= found.kv_usage <= 1.0
        assert found.scraped_at is not None and found.scraped_at <= clock.now()
