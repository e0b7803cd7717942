"""Fairness policies: which flow of a band goes next.

- ``global_strict``: ``global-strict-fairness-policy``, the band as one logical queue in
  ordering-policy order;
- ``round_robin``: ``round-robin-fairness-policy``, one dispatch turn per active flow, in a ring;
- ``token_fair``: ``token-fair-fairness-policy`` (sluiceway's own), virtual token counters.
"""

from sluiceway.flowcontrol.fairness.global_strict import GlobalStrict
from sluiceway.flowcontrol.fairness.round_robin import RoundRobin
from sluiceway.flowcontrol.fairness.token_fair import TokenFair

__all__ = ["GlobalStrict", "RoundRobin", "TokenFair"]
