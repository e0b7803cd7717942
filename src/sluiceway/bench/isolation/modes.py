"""The four protection modes: the router's flow-control document, whether the processor
resumes evicted completions, and the async ceiling the async-only checks scale by.

``none``: flow control off and no detector, so async work is admitted past C into the model
server's own first-come queue (the unprotected control). ``holdback`` and ``eviction``: the
multi-tenant guide's two router values, unchanged. ``best``: eviction plus the adaptive
holdback policy, with prefix resume in the processor.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Final

from sluiceway.wire.lanes import LANES

__all__ = ["MODES", "OBJECTIVES", "ModeSpec", "mode_spec"]

MODES: Final = ("none", "holdback", "eviction", "best")

OBJECTIVES: Final[dict[str, int]] = {lane.key: lane.guide_priority for lane in LANES}

_BAND = {
    "maxRequests": "500",
    "fairnessPolicyRef": "round-robin-fairness-policy",
    "orderingPolicyRef": "fcfs-ordering-policy",
}


def _guide(capacity: int) -> dict[str, Any]:
    """The guide's evictable router document, for a pool of ``capacity`` slots."""
    return {
        "apiVersion": "llm-d.ai/v1",
        "kind": "EndpointPickerConfig",
        "featureGates": ["flowControl"],
        "plugins": [
            {"type": "queue-scorer"},
            {"type": "kv-cache-utilization-scorer"},
            {"type": "prefix-cache-scorer"},
            {"type": "round-robin-fairness-policy"},
            {"type": "fcfs-ordering-policy"},
            {
                "type": "concurrency-detector",
                "parameters": {
                    "maxConcurrency": capacity,
                    "concurrencyMode": "requests",
                    "headroom": 0.0,
                },
            },
        ],
        "schedulingProfiles": [
            {
                "name": "default",
                "plugins": [
                    {"pluginRef": "queue-scorer", "weight": 2},
                    {"pluginRef": "kv-cache-utilization-scorer", "weight": 2},
                    {"pluginRef": "prefix-cache-scorer", "weight": 3},
                ],
            }
        ],
        "flowControl": {
            "maxBytes": "10Gi",
            "maxRequests": "1k",
            "defaultRequestTTL": "300s",
            "saturationDetector": {"pluginRef": "concurrency-detector"},
            "enableEviction": True,
            "priorityBands": [
                {"priority": p, **_BAND} for p in sorted(set(OBJECTIVES.values()), reverse=True)
            ],
        },
    }


@dataclass(frozen=True)
class ModeSpec:
    """What one mode configures."""

    name: str
    router: dict[str, Any]
    resume: bool = False
    ceiling: float = 1.0
    env: dict[str, str] = field(default_factory=dict)  # tolerance settings the lane implies
    # the processor pool's gate (gate_type, gate_params); "" for none
    pool_gate: tuple[str, dict[str, Any]] = ("", {})
    # processor settings other than the defaults (ProcessorSpec fields)
    processor: dict[str, Any] = field(default_factory=dict)


def _with_policy(doc: dict[str, Any], plugin: dict[str, Any], *, eviction: bool) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    doc["plugins"].append(plugin)
    fc = doc["flowControl"]
    fc["usageLimitPolicyPluginRef"] = plugin["name"]
    if not eviction:
        del fc["enableEviction"]
    return doc


ASYNC_BAND_QUEUE = "2"


def _short_async_queues(doc: dict[str, Any]) -> dict[str, Any]:
    """Bands below the realtime one queue at most ``ASYNC_BAND_QUEUE`` requests in the router:
    the rest wait in the processor, which can serve them newest first and refuse what cannot
    finish, and the router's 429 (rejected-saturated) moves the processor's ``aimd`` window."""
    top = max(OBJECTIVES.values())
    for band in doc["flowControl"]["priorityBands"]:
        if band["priority"] < top:
            band["maxRequests"] = ASYNC_BAND_QUEUE
    return doc


def mode_spec(name: str, capacity: int) -> ModeSpec:
    """The spec of mode ``name``; an unknown name raises :class:`ValueError`."""
    guide = _guide(capacity)
    evictable = {"AMT_LEVEL_100_TTFT_ABS": "0.6"}  # an eviction round trip at 100 %
    if name == "none":  # the control: no protection in the router, and none in the processor
        unprotected = {"feasibility": False, "overload_sojourn_target": 0.0}
        doc = {"apiVersion": "llm-d.ai/v1", "kind": "EndpointPickerConfig"}
        return ModeSpec(name, doc, processor=unprotected)
    if name == "holdback":
        holdback = {
            "type": "priority-holdback-policy",
            "name": "holdback",
            "parameters": {
                "shape": "linear",
                "domain": "rank",
                "minCeiling": 0.5,
                "maxCeiling": 1.0,
            },
        }
        return ModeSpec(name, _with_policy(guide, holdback, eviction=False), ceiling=0.5)
    if name == "eviction":
        return ModeSpec(name, guide, env=evictable)
    if name == "best":
        adaptive = {
            "type": "adaptive-holdback-policy",
            "name": "adaptive",
            "parameters": {"window": "30s", "buckets": 10, "safety": 0.0, "margin": 0},
        }
        doc = _with_policy(guide, adaptive, eviction=True)
        return ModeSpec(
            name, _short_async_queues(doc), resume=True, env=evictable, pool_gate=("aimd", {})
        )
    raise ValueError(f"unknown mode {name!r}: use one of {', '.join(MODES)}")
