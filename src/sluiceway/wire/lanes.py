"""The six strict lanes of the tier-priority merge, keyed as upstream's ``lane_objectives``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = [
    "CLASSIFICATIONS",
    "LANES",
    "LANE_KEYS",
    "TIERS",
    "Lane",
    "lane_by_key",
    "lane_for",
]

RESERVED: Final = "reserved"
OVERFLOW: Final = "overflow"
CLASSIFICATIONS: Final = (RESERVED, OVERFLOW)
TIERS: Final = ("interactive", "async", "batch")


@dataclass(frozen=True, slots=True)
class Lane:
    """One lane; ``index`` 0 is served first; ``guide_priority`` = the guide objective priority."""

    index: int
    key: str
    classification: str
    tier: str
    guide_priority: int


LANES: Final[tuple[Lane, ...]] = (
    Lane(0, "reserved-interactive", RESERVED, "interactive", 100),
    Lane(1, "reserved-async", RESERVED, "async", 60),
    Lane(2, "reserved-batch", RESERVED, "batch", 30),
    Lane(3, "overflow-interactive", OVERFLOW, "interactive", 10),
    Lane(4, "overflow-async", OVERFLOW, "async", -5),
    Lane(5, "overflow-batch", OVERFLOW, "batch", -10),
)
LANE_KEYS: Final = tuple(lane.key for lane in LANES)
_TIER_RANK: Final = {"interactive": 0, "async": 1}


def lane_for(classification: str | None, tier: str | None) -> Lane:
    """The lane of a request.

    Only ``reserved`` counts as reserved (``overflow``, missing or anything else is overflow);
    an unknown or missing tier counts as batch in both classes.
    """
    class_rank = 0 if classification == RESERVED else 1
    tier_rank = _TIER_RANK.get(tier or "", 2)
    return LANES[class_rank * 3 + tier_rank]


def lane_by_key(key: str) -> Lane | None:
    """The lane named ``key`` (a ``lane_objectives`` key), or None."""
    for lane in LANES:
        if lane.key == key:
            return lane
    return None
