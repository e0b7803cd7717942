"""Stage-aware saturation: prefill and decode endpoints are judged apart, the worse one wins.

Roles (label ``llm-d.ai/role``): ``prefill`` and ``encode-prefill`` -> prefill; ``decode`` or no
label -> decode; ``prefill-decode``, ``both``, ``encode-prefill-decode`` -> both stages;
``encode`` and unknown roles -> neither. With no endpoint in either stage, the whole pool is
judged as one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from sluiceway.flowcontrol.base import CapacityView, EndpointSnapshot, SaturationDetector

__all__ = ["stage_of", "staged_view"]

_STAGES: dict[str | None, tuple[str, ...]] = {
    "prefill": ("prefill",),
    "encode-prefill": ("prefill",),
    "decode": ("decode",),
    None: ("decode",),
    "prefill-decode": ("prefill", "decode"),
    "both": ("prefill", "decode"),
    "encode-prefill-decode": ("prefill", "decode"),
}


def stage_of(role: str | None) -> tuple[str, ...]:
    """The stages an endpoint with ``role`` serves (empty for encode-only or unknown)."""
    return _STAGES.get(role, ())


def staged_view(
    detector: SaturationDetector, endpoints: Sequence[EndpointSnapshot], now: float
) -> CapacityView:
    """The detector's view per stage; the effective view is the most saturated stage, with
    every stage's value in ``stages`` (``effective`` included) for the saturation gauge."""
    parts: dict[str, list[EndpointSnapshot]] = {"prefill": [], "decode": []}
    for e in endpoints:
        for stage in stage_of(e.role):
            parts[stage].append(e)
    views = {s: detector.view(eps, now) for s, eps in parts.items() if eps}
    if not views:
        whole = detector.view(endpoints, now)
        return replace(whole, stages=(("effective", whole.saturation),))
    worst = max(views.values(), key=lambda v: v.saturation)
    stages = tuple((s, v.saturation) for s, v in views.items())
    return replace(worst, stages=(*stages, ("effective", worst.saturation)))
