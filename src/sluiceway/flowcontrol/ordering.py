"""Ordering policies: which item of a flow goes first (smaller key first).

Keys are computed once, at enqueue, so a flow's heap never needs re-sorting.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sluiceway.flowcontrol.base import Item

__all__ = ["EDF", "FCFS", "SLODeadline", "ordering_by_name"]

_LAST = math.inf


@dataclass(frozen=True, slots=True)
class FCFS:
    """First come, first served by enqueue time (``fcfs-ordering-policy``, the default)."""

    name: str = "fcfs-ordering-policy"

    def key(self, item: Item) -> tuple[float, float]:
        return (item.enqueue_time, 0.0)


@dataclass(frozen=True, slots=True)
class EDF:
    """Earliest deadline first: enqueue time + effective TTL; no TTL sorts last; ties by
    enqueue time (``edf-ordering-policy``)."""

    name: str = "edf-ordering-policy"

    def key(self, item: Item) -> tuple[float, float]:
        deadline = item.enqueue_time + item.ttl if item.ttl > 0 else _LAST
        return (deadline, item.enqueue_time)


@dataclass(frozen=True, slots=True)
class SLODeadline:
    """Received time + the ``x-llm-d-slo-ttft-ms`` SLO; missing or negative SLO sorts behind
    every SLO request; ties by received time (``slo-deadline-ordering-policy``)."""

    name: str = "slo-deadline-ordering-policy"

    def key(self, item: Item) -> tuple[float, float]:
        slo = item.request.slo_ttft_ms
        received = item.received_at
        if slo is None or slo < 0:
            return (_LAST, received)
        return (received + slo / 1000.0, received)


def ordering_by_name(type_name: str) -> FCFS | EDF | SLODeadline:
    """The ordering policy of a plugin type name; KeyError when unknown."""
    table: dict[str, FCFS | EDF | SLODeadline] = {
        "fcfs-ordering-policy": FCFS(),
        "edf-ordering-policy": EDF(),
        "slo-deadline-ordering-policy": SLODeadline(),
    }
    return table[type_name]
