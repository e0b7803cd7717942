"""Hot reload of queues: new queues start, removed ones stop and give back what they held."""

from __future__ import annotations

import pytest
from processor_harness import collect, guide_entry, guide_settings, processor, rig

from sluiceway.processor.specs import QueueSpec

pytestmark = pytest.mark.serial


async def test_queues_come_and_go_without_a_restart() -> None:
    async with rig() as r:
        a = QueueSpec(id="a", queue_name="a", igw_base_url=r.url, pool_id="teams")
        b = QueueSpec(id="b", queue_name="b", igw_base_url=r.url, pool_id="teams")
        await r.broker.enqueue("b", [guide_entry("b", 0, now=r.clock.now())])
        async with processor(r, guide_settings([a], workers=2)) as proc:
            await r.broker.enqueue("a", [guide_entry("a", 0, now=r.clock.now())])
            (first,) = await collect(r.broker, 1)
            assert first.id == "a-r-0000" and await r.broker.backlog("b") == 1
            plan = await proc.reconfigure([a, b])
            assert [q.id for q in plan.add] == ["b"] and plan.keep == ("a",)
            (second,) = await collect(r.broker, 1)
            assert second.id == "b-r-0000"
            await proc.reconfigure([b])
            assert [i.queue.id for i in proc.ingests] == ["b"]
            await r.broker.enqueue("a", [guide_entry("a", 1, now=r.clock.now())])
            await proc.wait_idle()
            assert await r.broker.backlog("a") == 1
            assert await r.broker.result_count("results-list") == 0
