"""Scenario A: one request per team, one worker: premium, standard, batch; stamped as the
simulator sees them."""

from __future__ import annotations

import pytest
from processor_harness import (
    FAIRNESS,
    OBJECTIVE,
    collect,
    guide_settings,
    processor,
    publish,
    rig,
    team_queues,
)

pytestmark = pytest.mark.serial


async def test_one_worker_dispatches_in_tier_order_with_lane_objectives() -> None:
    async with rig() as r:
        for team in ("batch", "standard", "premium"):
            await publish(r.broker, r.clock, team, 1)
        async with processor(r, guide_settings(team_queues(r.url), workers=1)):
            results = await collect(r.broker, 3)
        assert [res.status_code for res in results] == [200, 200, 200]
        assert [res.id.split("-")[0] for res in results] == ["premium", "standard", "batch"]
        engine = r.sim.engines[0]
        assert set(engine.max_running_by_label(OBJECTIVE)) == {
            "reserved-interactive",
            "reserved-async",
            "reserved-batch",
        }
        assert set(engine.max_running_by_label(FAIRNESS)) == {"premium", "standard", "batch"}
        assert all(res.request_token for res in results)
