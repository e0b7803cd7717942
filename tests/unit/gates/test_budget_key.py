"""redis: the budget key read through the shared refresher, fallback while Redis is down."""

from __future__ import annotations

from signals.fakes import SetSource

from sluiceway.gates.factory import build_gate
from sluiceway.gates.metric import MetricGate

from .helpers import NOW
from .hub import context


class Backend:
    def __init__(self, source: SetSource) -> None:
        self.source = source
        self.asked: tuple[str, str] = ("", "")

    def budget_key(self, address: str, key: str) -> SetSource:
        self.asked = (address, key)
        return self.source

    def leased_rate(self, address: str, **kw: object) -> object:
        raise AssertionError("not used")


async def test_reads_the_key_and_falls_back_when_blind() -> None:
    source = SetSource(0.4)
    backend = Backend(source)
    gate = build_gate("redis", {"address": "redis:6379"}, context(redis_gates=backend))
    assert isinstance(gate, MetricGate)
    assert backend.asked == ("redis:6379", "dispatch-gate-budget")
    assert await gate.budget(NOW) == 0.4
    source.error = "down"
    await gate.refresher.refresh()
    assert await gate.budget(NOW) == 0.0
    await gate.aclose()
