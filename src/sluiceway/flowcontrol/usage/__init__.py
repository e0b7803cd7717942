"""Usage-limit policies: per-band dispatch ceilings.

- ``static``: ``static-usage-limit-policy``, the same ceiling for every band;
- ``priority_holdback``: ``priority-holdback-policy``, ceilings falling linearly from the
  highest band to the lowest;
- ``soft_reflective``: ``soft-reflective-ceiling-policy``, lower bands pause as saturation
  rises and near the set point alternate open and closed;
- ``adaptive_holdback``: ``adaptive-holdback-policy`` (sluiceway's own), headroom for higher
  bands only while they have recent demand.
"""

from sluiceway.flowcontrol.usage.adaptive_holdback import AdaptiveHoldback
from sluiceway.flowcontrol.usage.priority_holdback import PriorityHoldback
from sluiceway.flowcontrol.usage.soft_reflective import SoftReflective
from sluiceway.flowcontrol.usage.static import StaticUsageLimit

__all__ = ["AdaptiveHoldback", "PriorityHoldback", "SoftReflective", "StaticUsageLimit"]
