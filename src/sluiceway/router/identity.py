"""Who a request is and what it may ask of flow control, from its headers (pure; no I/O).

The objective comes from ``x-llm-d-inference-objective`` or its older spelling
``x-gateway-inference-objective`` (the newer wins when both arrive); the fairness id likewise,
defaulting to ``default-flow``. ``x-llm-d-inference-ttl`` (a Go duration) may only shorten the
queue budget; ``x-llm-d-slo-ttft-ms`` feeds the SLO ordering policy.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sluiceway.config.quantities import parse_duration
from sluiceway.wire import headers as h

__all__ = ["Identity", "header_map", "read_identity"]


@dataclass(frozen=True, slots=True)
class Identity:
    objective: str | None
    fairness_id: str
    ttl: float | None
    slo_ttft_ms: int | None
    request_id: str | None


def header_map(raw: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    """Raw ASGI headers as a dict with lower-case names (the last value wins)."""
    return {n.decode("latin-1"): v.decode("latin-1") for n, v in raw}


def read_identity(headers: dict[str, str]) -> Identity:
    """Objective, fairness id, TTL and SLO from lower-case ``headers``."""
    fairness = h.first_of(headers, h.FAIRNESS_ID_ALIASES) or h.DEFAULT_FAIRNESS_ID
    return Identity(
        objective=h.first_of(headers, h.OBJECTIVE_ALIASES) or None,
        fairness_id=fairness,
        ttl=_ttl(headers.get(h.INFERENCE_TTL)),
        slo_ttft_ms=_int(h.first_of(headers, h.SLO_TTFT_MS_ALIASES)),
        request_id=headers.get(h.REQUEST_ID),
    )


def _ttl(value: str | None) -> float | None:
    if not value:
        return None
    try:
        seconds = parse_duration(value)
    except ValueError:
        return None
    return seconds if seconds > 0 else None


def _int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None
