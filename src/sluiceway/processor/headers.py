"""The URL and headers of an upstream request (pure; reference llm-d-async 4.2, 4.5).

Order: ``content-type``; the queue's objective; the caller's ``headers`` (may override both);
the fairness id from ``metadata[fairness_attribute]``; with ``tier-priority``, the priority
header (lane index) and the lane objective. ``x-request-id`` defaults to the request id so that
the router and the simulator can track attempts. Names are lower case (HTTP is
case-insensitive); stamping a header first removes every case variant the caller sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from sluiceway.wire import headers as h
from sluiceway.wire.lanes import Lane

__all__ = ["HeaderPolicy", "build_headers", "build_url", "valid_header_value"]

_MAX_FAIRNESS_BYTES = 256


@dataclass(frozen=True, slots=True)
class HeaderPolicy:
    """What the merge policy stamps (its parameters in docs/configuration.md)."""

    stamp_lanes: bool = False
    lane_objectives: Mapping[str, str] = field(default_factory=dict)
    objective_header: str = h.OBJECTIVE
    fairness_header: str = h.FAIRNESS_ID
    fairness_attribute: str = "userid"
    priority_header: str = ""


def valid_header_value(value: str) -> bool:
    """Visible ASCII and spaces/tabs only, no line breaks (RFC 9110 field-value, strictly)."""
    return all(ch == "\t" or 0x20 <= ord(ch) < 0x7F for ch in value)


def build_url(base_url: str, path: str) -> str:
    """``igw_base_url`` joined with the request path (exactly one slash between them)."""
    return f"{base_url.rstrip('/')}/{path.lstrip('/')}"


def _set(headers: dict[str, str], name: str, value: str) -> None:
    headers[name.lower()] = value


def _fairness_value(metadata: Mapping[str, str], attribute: str) -> str | None:
    value = metadata.get(attribute, "")
    if not value or len(value.encode()) > _MAX_FAIRNESS_BYTES or not valid_header_value(value):
        return None
    return value


def build_headers(
    *,
    request_id: str,
    caller_headers: Mapping[str, str],
    metadata: Mapping[str, str],
    queue_objective: str,
    lane: Lane,
    policy: HeaderPolicy,
) -> dict[str, str]:
    """The headers of one upstream attempt (lower-case names)."""
    out: dict[str, str] = {"content-type": "application/json"}
    if queue_objective:
        _set(out, h.OBJECTIVE, queue_objective)
    for name, value in caller_headers.items():
        _set(out, name, value)
    fairness = _fairness_value(metadata, policy.fairness_attribute)
    if policy.fairness_header and fairness is not None:
        _set(out, policy.fairness_header, fairness)
    if policy.stamp_lanes:
        if policy.priority_header:
            _set(out, policy.priority_header, str(lane.index))
        objective = policy.lane_objectives.get(lane.key)
        if objective:
            _set(out, policy.objective_header, objective)
    out.setdefault(h.REQUEST_ID, request_id)
    return out
