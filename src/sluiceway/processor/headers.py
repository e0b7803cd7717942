"""The URL and headers of an upstream request (pure; the order llm-d-async builds them in).

Order: ``content-type``; the caller's ``headers``; the fairness id from
``metadata[fairness_attribute]``; with ``tier-priority``, the priority header (lane index);
then exactly one objective header. ``x-request-id`` defaults to the request id so that the
router and the simulator can track attempts. Names are lower case (HTTP is case-insensitive);
stamping a header first removes every case variant the caller sent.

The queue budget: ``x-llm-d-inference-ttl`` tells the router how long the request may wait in
its flow control, the time to the deadline less the model time the request needs
(:func:`queue_ttl`, stamped by the worker on every attempt, a resumed one included); a
request that waits longer could not finish, so the router drops
it before the model spends anything on it. A caller's own TTL is sent as it is.

The objective: a caller's own ``x-llm-d-inference-objective`` or
``x-gateway-inference-objective`` (either spelling; the first wins when both are sent) is a
per-request override; else the lane's objective (``tier-priority``), else the queue's. It is
sent once, under ``objective_header``, so the router never sees two objectives.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from sluiceway.wire import headers as h
from sluiceway.wire.lanes import Lane

__all__ = [
    "HeaderPolicy",
    "build_headers",
    "build_url",
    "queue_ttl",
    "queued_seconds",
    "valid_header_value",
]

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
    for name, value in caller_headers.items():
        _set(out, name, value)
    override = _pop_objectives(out)
    fairness = _fairness_value(metadata, policy.fairness_attribute)
    if policy.fairness_header and fairness is not None:
        _set(out, policy.fairness_header, fairness)
    lane_objective = ""
    if policy.stamp_lanes:
        if policy.priority_header:
            _set(out, policy.priority_header, str(lane.index))
        lane_objective = policy.lane_objectives.get(lane.key, "")
    objective = override or lane_objective or queue_objective
    if objective:
        _set(out, policy.objective_header or h.OBJECTIVE, objective)
    out.setdefault(h.REQUEST_ID, request_id)
    return out


def queue_ttl(remaining: float, needed: float) -> str:
    """The value of ``x-llm-d-inference-ttl``: ``remaining`` seconds to the deadline less the
    model time ``needed``, at least 1 ms."""
    return f"{max(0.001, remaining - max(0.0, needed)):.3f}s"


def queued_seconds(headers: Mapping[str, str]) -> float:
    """The router's ``x-llm-d-flow-queue-duration-ms`` of an answer, in seconds (0 when absent
    or unreadable)."""
    try:
        return max(0.0, float(headers.get(h.FLOW_QUEUE_DURATION_MS) or 0) / 1000)
    except ValueError:
        return 0.0


def _pop_objectives(headers: dict[str, str]) -> str:
    """Remove every objective header the caller sent; the first non-empty one's value."""
    found = [headers.pop(name, "") for name in h.OBJECTIVE_ALIASES]
    return next((value for value in found if value), "")
