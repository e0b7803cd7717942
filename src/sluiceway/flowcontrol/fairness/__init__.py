"""Fairness policies: which flow of a band goes next."""

from sluiceway.flowcontrol.fairness.global_strict import GlobalStrict
from sluiceway.flowcontrol.fairness.round_robin import RoundRobin
from sluiceway.flowcontrol.fairness.token_fair import TokenFair

__all__ = ["GlobalStrict", "RoundRobin", "TokenFair"]
