"""Saturation detectors: endpoint snapshots -> one saturation value (1.0 = set point).

- ``concurrency``: ``concurrency-detector``, from in-flight requests and tokens per endpoint;
- ``utilization``: ``utilization-detector``, from scraped queue depth and KV-cache usage;
- ``stages``: prefill and decode endpoints judged apart, the worse one wins.
"""

from sluiceway.flowcontrol.saturation.concurrency import ConcurrencyDetector
from sluiceway.flowcontrol.saturation.stages import staged_view
from sluiceway.flowcontrol.saturation.utilization import UtilizationDetector

__all__ = ["ConcurrencyDetector", "UtilizationDetector", "staged_view"]
