"""tier-priority-admission: the verdict table while saturated; a blind gate never sheds."""

from __future__ import annotations

import pytest

from sluiceway.gates.base import Decision, GateRequest, Holdings, Verdict
from sluiceway.gates.constant import ConstantGate
from sluiceway.gates.factory import build_gate
from sluiceway.gates.tier_priority import SHED_PAYLOAD, TierPriorityAdmissionGate, verdict

from .helpers import NOW, make_request
from .hub import context


@pytest.mark.parametrize(
    ("classification", "tier", "blind", "expected"),
    [
        ("reserved", "interactive", False, Verdict.WAIT),
        ("reserved", "batch", True, Verdict.WAIT),
        ("overflow", "interactive", False, Verdict.DROP),
        ("overflow", "interactive", True, Verdict.REFUSE),
        ("overflow", "async", False, Verdict.REFUSE),
        (None, "interactive", False, Verdict.REFUSE),
    ],
)
def test_table(classification: str | None, tier: str, blind: bool, expected: Verdict) -> None:
    assert verdict(classification, tier, blind=blind).verdict is expected


def test_shed_payload_is_upstreams_429() -> None:
    assert verdict("overflow", "interactive", blind=False).drop_payload == SHED_PAYLOAD


class Blind(ConstantGate):
    blind = True


class Failing(ConstantGate):
    async def apply(self, request: GateRequest, holdings: Holdings, now: float) -> Decision:
        return Decision(Verdict.ERROR, "boom")


def _req(classification: str, tier: str) -> GateRequest:
    return make_request({"classification": classification, "tier": tier})


async def test_open_inner_continues_and_closed_inner_applies_the_table() -> None:
    open_gate = TierPriorityAdmissionGate(ConstantGate(0.5))
    assert await open_gate.budget(NOW) == 0.5
    assert (await open_gate.apply(_req("overflow", "interactive"), Holdings(), NOW)).admitted
    closed = TierPriorityAdmissionGate(ConstantGate(0.0))
    assert await closed.budget(NOW) == 1.0  # the table decides, not the in-flight cap
    shed = await closed.apply(_req("overflow", "interactive"), Holdings(), NOW)
    assert shed.verdict is Verdict.DROP
    blind = TierPriorityAdmissionGate(Blind(0.0))
    assert (await blind.apply(_req("overflow", "interactive"), Holdings(), NOW)).verdict is (
        Verdict.REFUSE
    )


async def test_inner_error_is_an_error_and_custom_tier_label() -> None:
    failing = TierPriorityAdmissionGate(Failing())
    decision = await failing.apply(_req("reserved", "batch"), Holdings(), NOW)
    assert decision.verdict is Verdict.ERROR and "boom" in decision.message
    custom = TierPriorityAdmissionGate(ConstantGate(0.0), tier_label="class")
    request = make_request({"classification": "overflow", "class": "interactive"})
    assert (await custom.apply(request, Holdings(), NOW)).verdict is Verdict.DROP


def test_builds_its_inner_gate_from_the_guide_shape() -> None:
    params = {
        "saturation_gate": "prometheus-saturation",
        "saturation_gate_params": '{"pool": "p", "threshold": "0.8"}',
    }
    gate = build_gate("tier-priority-admission", params, context())
    assert isinstance(gate, TierPriorityAdmissionGate) and not gate.blind
