"""Who a request is and what it may ask of flow control, from its headers (pure; no I/O).

The objective comes from ``x-llm-d-inference-objective`` or its older spelling
``x-gateway-inference-objective`` (the newer wins when both arrive); the fairness id likewise,
defaulting to ``default-flow``. ``x-llm-d-inference-ttl`` (a Go duration) may only shorten the
queue budget; ``x-llm-d-slo-ttft-ms`` feeds the SLO ordering policy.

The request id (:func:`claim_request_id`): the caller's ``x-request-id`` when the rule of
:mod:`sluiceway.wire.request_ids` keeps it, else a fresh one that replaces it, so the model
server, the router's answer and its logs all name the same id.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sluiceway.config.quantities import parse_duration
from sluiceway.wire import headers as h
from sluiceway.wire.request_ids import request_id_for

__all__ = ["Identity", "claim_request_id", "header_map", "read_identity"]

_REQUEST_ID = h.REQUEST_ID.encode()


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


def claim_request_id(
    raw: Sequence[tuple[bytes, bytes]],
) -> tuple[str, list[tuple[bytes, bytes]]]:
    """The id a request goes by, and its raw headers (lower-case names) carrying exactly that
    one ``x-request-id`` (the caller's first one when kept; others dropped)."""
    values = [value for name, value in raw if name == _REQUEST_ID]
    rid, own = request_id_for(values[0].decode("latin-1") if values else None)
    if own and len(values) == 1:
        return rid, list(raw)
    kept = [(name, value) for name, value in raw if name != _REQUEST_ID]
    kept.append((_REQUEST_ID, rid.encode("latin-1")))
    return rid, kept


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
