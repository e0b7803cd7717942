"""Saturation detectors: endpoint snapshots -> one saturation value (1.0 = set point)."""

from sluiceway.flowcontrol.saturation.concurrency import ConcurrencyDetector
from sluiceway.flowcontrol.saturation.stages import staged_view
from sluiceway.flowcontrol.saturation.utilization import UtilizationDetector

__all__ = ["ConcurrencyDetector", "UtilizationDetector", "staged_view"]
