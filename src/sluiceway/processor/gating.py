"""The gate step, at the queue (ingest, before the claim) and at the pool (worker, before the
send): what a gate sees of a request, and why a held request was held.

One builder of :class:`~sluiceway.gates.base.GateRequest` serves both places, so queue and
pool gates see the same fields. A gate's classification comes back in its ``Decision``.
"""

from __future__ import annotations

from sluiceway.gates.base import Decision, Gate, GateRequest, Holdings, Verdict, apply_chain
from sluiceway.wire import Envelope

__all__ = ["apply_gate", "gate_reason", "gate_request"]


def gate_request(envelope: Envelope, *, holder: str, lease_until: float) -> GateRequest:
    """What a gate sees of ``envelope``; ``holder`` is the claim's quota holder token,
    ``lease_until`` the claim's lease (scaled Unix seconds)."""
    return GateRequest(
        request_id=envelope.id,
        request_token=envelope.request_token,
        holder=holder,
        deadline=float(envelope.data.deadline),
        lease_until=lease_until,
        metadata=envelope.data.metadata,
        labels=envelope.internal.labels,
    )


async def apply_gate(gate: Gate, request: GateRequest, holdings: Holdings, now: float) -> Decision:
    """Apply one gate; what it acquired is rolled back unless it admits."""
    return await apply_chain([gate], request, holdings, now)


def gate_reason(verdict: Verdict, classification: str | None) -> str:
    """The ``gate_decisions_total`` reason of a held request: refusals of ``overflow``
    requests are ``quota_exhausted`` (as upstream counts them), other holds ``gate_closed``."""
    if verdict is Verdict.ERROR:
        return "error"
    if verdict is Verdict.DROP:
        return "dropped"
    return "quota_exhausted" if classification == "overflow" else "gate_closed"
