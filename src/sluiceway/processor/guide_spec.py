"""The multitenant guide's processor shape, built in code: three team queues with a
classifying ``redis-quota`` gate each, one ``teams`` pool, tier-priority lanes with the lane
stamped on every request (objective per lane, fairness by ``team``).

One builder for the tests, the end-to-end rigs and the benchmarks, so they all run the same
shape (the demo loads the same values from its YAML file).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from sluiceway.processor.headers import HeaderPolicy
from sluiceway.processor.specs import MergeSpec, PoolSpec, ProcessorSpec, QueueSpec
from sluiceway.wire.lanes import LANE_KEYS

__all__ = ["GUIDE_POOL", "GUIDE_TEAMS", "guide_merge", "guide_spec", "team_queues", "team_quota"]

# team -> (tier, reserved concurrency)
GUIDE_TEAMS: dict[str, tuple[str, int]] = {
    "premium": ("interactive", 2),
    "standard": ("async", 2),
    "batch": ("batch", 1),
}
GUIDE_POOL = "teams"


def team_quota(limit: int, gating_mode: str = "classifying") -> dict[str, Any]:
    """``redis-quota`` params: ``limit`` concurrent requests per ``team`` metadata value."""
    return {
        "attribute": "team",
        "mode": "concurrency",
        "limit": str(limit),
        "gating_mode": gating_mode,
    }


def team_queues(
    url: str, *, gating_mode: str = "classifying", quota: bool = True, **kw: Any
) -> list[QueueSpec]:
    """One queue ``team-<name>`` per guide team, labelled with its tier, sending to ``url``;
    ``kw`` sets further :class:`QueueSpec` fields."""
    return [
        QueueSpec(
            id=f"team-{team}",
            queue_name=f"team-{team}",
            igw_base_url=url,
            pool_id=GUIDE_POOL,
            labels={"tier": tier},
            gate_type="redis-quota" if quota else "",
            gate_params=team_quota(limit, gating_mode) if quota else {},
            **kw,
        )
        for team, (tier, limit) in GUIDE_TEAMS.items()
    ]


def guide_merge() -> MergeSpec:
    return MergeSpec(
        ordering="tier-priority",
        headers=HeaderPolicy(
            stamp_lanes=True, lane_objectives={k: k for k in LANE_KEYS}, fairness_attribute="team"
        ),
    )


def guide_spec(queues: Sequence[QueueSpec], *, workers: int = 1, **kw: Any) -> ProcessorSpec:
    """The guide's processor over ``queues``: ``workers`` in the ``teams`` pool, results to
    ``results-list``, a 1 s poll interval, no backlog poller; ``kw`` overrides any field."""
    spec = ProcessorSpec(
        queues=tuple(queues),
        pools=(PoolSpec(id=GUIDE_POOL, workers=workers),),
        merge=guide_merge(),
        result_queue_name="results-list",
        poll_interval=1.0,
        backlog_interval=0,
    )
    return replace(spec, **kw)
