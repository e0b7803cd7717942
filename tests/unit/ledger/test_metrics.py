"""The ledger's metrics read its state when scraped."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from sluiceway.clock import RealClock
from sluiceway.ledger.leases import LeaseLedger, LedgerSettings
from sluiceway.ledger.metrics import LedgerCollector
from sluiceway.ledger.replicas import ReplicaSet
from sluiceway.ledger.share import LedgerView


class _NoRedis:
    def register_script(self, script: str) -> object:
        return None


def test_the_state_as_scraped() -> None:
    ledger = LeaseLedger(
        ReplicaSet(_NoRedis(), "router/p"), "m", RealClock(), LedgerSettings("redis://x")
    )
    registry = CollectorRegistry()
    registry.register(LedgerCollector(ledger, "p"))
    ledger.held, ledger.spare, ledger.calls = 3, 2, 7
    ledger.view = LedgerView(others=5, live=2)

    def value(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, {"inference_pool": "p", **labels})

    assert value("sluiceway_router_ledger_connected") == 1.0
    assert value("sluiceway_router_ledger_replicas") == 2.0
    assert value("sluiceway_router_ledger_leases", holder="self") == 3.0
    assert value("sluiceway_router_ledger_leases", holder="others") == 5.0
    assert value("sluiceway_router_ledger_leases", holder="spare") == 2.0
    assert value("sluiceway_router_ledger_calls_total") == 7.0
    ledger.view = ledger.view.lost(0.0, 3.0)
    assert value("sluiceway_router_ledger_connected") == 0.0
