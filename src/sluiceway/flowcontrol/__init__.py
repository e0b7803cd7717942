"""Flow control: strict priority bands, fairness inside a band, ordering inside a flow, usage
limits (holdback), saturation detectors and in-flight eviction. Pure logic (no HTTP, no clock);
:mod:`sluiceway.flowcontrol.adapter` is the asyncio shell around it.
"""

from sluiceway.flowcontrol.base import (
    CapacityView,
    DropReason,
    EndpointSnapshot,
    Finalized,
    FlowAnswer,
    FlowKey,
    Outcome,
    Request,
    Usage,
)
from sluiceway.flowcontrol.controller import Cycle, FlowController
from sluiceway.flowcontrol.settings import BandSettings, EvictionSettings, FlowControlSettings

__all__ = [
    "BandSettings",
    "CapacityView",
    "Cycle",
    "DropReason",
    "EndpointSnapshot",
    "EvictionSettings",
    "Finalized",
    "FlowAnswer",
    "FlowControlSettings",
    "FlowController",
    "FlowKey",
    "Outcome",
    "Request",
    "Usage",
]
