"""Flow control: strict priority bands, fairness inside a band, ordering inside a flow, usage
limits (holdback), saturation detectors and in-flight eviction. Pure logic (no HTTP, no clock);
:mod:`sluiceway.flowcontrol.adapter` is the asyncio shell around it.

Files:

- ``base``: the contracts (requests, items, outcomes, the policy protocols); ``settings``: the
  frozen settings, passed whole;
- ``controller``: the flow controller, a pure synchronous state machine; ``adapter``: its
  asyncio shell (waiters and deadlines; each cycle's decision returned to the router);
- ``bands``: priority bands (all flows of one priority and their fairness state); ``flows``: one
  tenant's queue at one priority; ``ordering``: which item of a flow goes first; ``expiry``:
  queue-wait budgets, with endpoints in the pool or none;
- ``eviction``: in-flight eviction of sheddable requests when higher demand is blocked;
  ``legacy``: the admission used when flow control is off;
- ``configure``: a parsed ``EndpointPickerConfig`` turned into settings and a detector;
- ``fairness``: which flow of a band goes next; ``saturation``: the saturation detectors;
  ``usage``: usage-limit policies, the per-band dispatch ceilings.
"""

from sluiceway.flowcontrol.base import (
    CapacityView,
    DropReason,
    DropStatus,
    EndpointSnapshot,
    Finalized,
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
    "DropStatus",
    "EndpointSnapshot",
    "EvictionSettings",
    "Finalized",
    "FlowControlSettings",
    "FlowController",
    "FlowKey",
    "Outcome",
    "Request",
    "Usage",
]
