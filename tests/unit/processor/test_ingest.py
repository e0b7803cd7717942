"""Gate decision reasons (upstream's rule: overflow refusals are quota_exhausted)."""

from __future__ import annotations

import pytest

from sluiceway.gates.base import Verdict
from sluiceway.processor.ingest import gate_reason


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
