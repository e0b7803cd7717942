"""Choosing the model server for one dispatched request (pure).

The base rule is least in flight (the router's own count). A scheduling profile may weight the
scorers upstream configures: ``queue-scorer`` (fewer waiting requests is better),
``kv-cache-utilization-scorer`` (lower KV use is better) and ``prefix-cache-scorer`` (the
endpoint that last served the same prompt prefix is better). Each scorer maps to [0, 1] over
the candidates (min-max, as upstream); the endpoint with the highest weighted sum wins; ties go
to the endpoint with fewer in flight, then round robin.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from sluiceway.config.router import EndpointPickerConfig

__all__ = ["PickerWeights", "PrefixAffinity", "Scored", "pick_endpoint"]

_INFLIGHT_WEIGHT = 1.0


@dataclass(frozen=True, slots=True)
class PickerWeights:
    """Scorer weights (0 = not used)."""

    queue: float = 0.0
    kv_cache: float = 0.0
    prefix: float = 0.0

    @classmethod
    def from_config(cls, config: EndpointPickerConfig) -> tuple[PickerWeights, list[str]]:
        """Weights from the first scheduling profile, and notes on what was not mapped."""
        if not config.scheduling_profiles:
            return cls(), []
        weights = {
            "queue-scorer": 0.0,
            "kv-cache-utilization-scorer": 0.0,
            "prefix-cache-scorer": 0.0,
        }
        notes: list[str] = []
        profile = config.scheduling_profiles[0]
        for ref in profile.plugins:
            spec = config.plugin(ref.plugin_ref)
            kind = spec.type if spec is not None else ref.plugin_ref
            if kind in weights:
                weights[kind] = 1.0 if ref.weight is None else float(ref.weight)
            else:
                notes.append(f"schedulingProfiles[0]: {ref.plugin_ref!r} has no picker equivalent")
        if len(config.scheduling_profiles) > 1:
            notes.append("schedulingProfiles: only the first profile is used")
        built = cls(
            weights["queue-scorer"],
            weights["kv-cache-utilization-scorer"],
            weights["prefix-cache-scorer"],
        )
        return built, notes


@dataclass(frozen=True, slots=True)
class Scored:
    """One candidate: ``name`` (its URL), the router's in-flight count, its load."""

    name: str
    inflight: int
    waiting: int
    kv_usage: float


def _normalized_low_is_good(values: Sequence[float]) -> list[float]:
    lo, hi = min(values), max(values)
    if hi <= lo:
        return [1.0] * len(values)
    return [(hi - v) / (hi - lo) for v in values]


def pick_endpoint(
    candidates: Sequence[Scored],
    weights: PickerWeights,
    *,
    affinity: str | None = None,
    turn: int = 0,
) -> int:
    """Index of the chosen candidate (``candidates`` must not be empty). ``affinity``: the
    endpoint that served this prefix last; ``turn``: rotates the tie order."""
    n = len(candidates)
    if n == 1:
        return 0
    scores = [
        _INFLIGHT_WEIGHT * s for s in _normalized_low_is_good([c.inflight for c in candidates])
    ]
    if weights.queue:
        q = _normalized_low_is_good([c.waiting for c in candidates])
        scores = [s + weights.queue * v for s, v in zip(scores, q, strict=True)]
    if weights.kv_cache:
        kv = _normalized_low_is_good([c.kv_usage for c in candidates])
        scores = [s + weights.kv_cache * v for s, v in zip(scores, kv, strict=True)]
    if weights.prefix and affinity is not None:
        scores = [
            s + (weights.prefix if c.name == affinity else 0.0)
            for s, c in zip(scores, candidates, strict=True)
        ]
    order = [(turn + i) % n for i in range(n)]
    return max(order, key=lambda i: (scores[i], -candidates[i].inflight))


class PrefixAffinity:
    """Which endpoint last served a prompt prefix (bounded, least recently used dropped)."""

    def __init__(self, capacity: int = 10_000) -> None:
        self._capacity = capacity
        self._last: OrderedDict[bytes, str] = OrderedDict()

    def get(self, prefix: bytes) -> str | None:
        if not prefix:
            return None
        return self._last.get(prefix)

    def served(self, prefix: bytes, endpoint: str) -> None:
        if not prefix:
            return
        self._last[prefix] = endpoint
        self._last.move_to_end(prefix)
        if len(self._last) > self._capacity:
            self._last.popitem(last=False)
