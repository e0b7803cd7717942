"""The gate step: one GateRequest builder, classifications as values, held reasons
(overflow refusals count as quota_exhausted, as upstream counts them)."""

from __future__ import annotations

import pytest

from sluiceway.gates.base import Decision, GateRequest, Holdings, Verdict
from sluiceway.processor.gating import apply_gate, gate_reason, gate_request
from sluiceway.processor.producer import request
from sluiceway.wire import Envelope, Internal

NOW = 1_700_000_000.0


@pytest.mark.parametrize(
    ("verdict", "classification", "reason"),
    [
        (Verdict.REFUSE, "overflow", "quota_exhausted"),
        (Verdict.REFUSE, "reserved", "gate_closed"),
        (Verdict.WAIT, None, "gate_closed"),
        (Verdict.WAIT, "overflow", "quota_exhausted"),
        (Verdict.DROP, "overflow", "dropped"),
        (Verdict.ERROR, "reserved", "error"),
    ],
)
def test_gate_reason(verdict: Verdict, classification: str | None, reason: str) -> None:
    assert gate_reason(verdict, classification) == reason


class Classifier:
    """A gate that admits or refuses with a classification."""

    def __init__(self, verdict: Verdict, classification: str) -> None:
        self.decision = Decision(verdict, classification=classification)
        self.seen: list[GateRequest] = []

    async def budget(self, now: float) -> float:
        return 1.0

    async def apply(self, req: GateRequest, holdings: Holdings, now: float) -> Decision:
        self.seen.append(req)
        return self.decision

    async def aclose(self) -> None:
        pass


def envelope() -> Envelope:
    data = request("r1", {}, deadline=NOW + 60, metadata={"team": "a"})
    return Envelope(data, Internal(request_token="tok", labels={"tier": "gold"}))


def test_the_gate_request_carries_the_envelopes_fields() -> None:
    built = gate_request(envelope(), holder="tok:owner", lease_until=NOW + 30)
    assert (built.request_id, built.request_token, built.holder) == ("r1", "tok", "tok:owner")
    assert (built.deadline, built.lease_until) == (NOW + 60, NOW + 30)
    assert (dict(built.metadata), dict(built.labels)) == ({"team": "a"}, {"tier": "gold"})


@pytest.mark.parametrize("verdict", [Verdict.CONTINUE, Verdict.REFUSE])
async def test_the_classification_comes_back_in_the_decision(verdict: Verdict) -> None:
    gate = Classifier(verdict, "overflow")
    built = gate_request(envelope(), holder="h", lease_until=NOW)
    decision = await apply_gate(gate, built, Holdings(), NOW)
    assert (decision.verdict, decision.classification) == (verdict, "overflow")
    assert "classification" not in gate.seen[0].labels
