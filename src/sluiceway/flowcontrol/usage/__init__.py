"""Usage-limit policies: per-band dispatch ceilings."""

from sluiceway.flowcontrol.usage.adaptive_holdback import AdaptiveHoldback
from sluiceway.flowcontrol.usage.priority_holdback import PriorityHoldback
from sluiceway.flowcontrol.usage.soft_reflective import SoftReflective
from sluiceway.flowcontrol.usage.static import StaticUsageLimit

__all__ = ["AdaptiveHoldback", "PriorityHoldback", "SoftReflective", "StaticUsageLimit"]
