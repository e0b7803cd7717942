"""The ledger's state as metrics, read when scraped (no bookkeeping on the request path)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from sluiceway.ledger.leases import LeaseLedger
from sluiceway.observability import names

__all__ = ["LedgerCollector"]


class LedgerCollector(Collector):
    def __init__(self, ledger: LeaseLedger, pool: str) -> None:
        self._ledger = ledger
        self._pool = pool

    def collect(self) -> Iterator[Any]:
        led, pool = self._ledger, [self._pool]
        view = led.view
        yield _gauge(
            names.ROUTER_LEDGER_CONNECTED,
            "1 while the ledger is reachable, 0 while this replica admits a local share.",
            pool,
            1.0 if view.connected else 0.0,
        )
        yield _gauge(
            names.ROUTER_LEDGER_REPLICAS,
            "Live router replicas of the pool, this one included, as last seen.",
            pool,
            view.live,
        )
        leases = GaugeMetricFamily(
            names.ROUTER_LEDGER_LEASES,
            "Capacity leases held: by this replica's requests, kept spare by it, and by the "
            "others as last seen.",
            labels=["inference_pool", "holder"],
        )
        leases.add_metric([self._pool, "self"], led.held)
        leases.add_metric([self._pool, "spare"], led.spare)
        leases.add_metric([self._pool, "others"], view.others)
        yield leases
        yield _gauge(
            names.ROUTER_LEDGER_WAITING,
            "Dispatched requests waiting for a lease (another replica took the room first).",
            pool,
            led.waiting,
        )
        for name, text, value in (
            (names.ROUTER_LEDGER_CALLS_TOTAL, "Calls that reached the ledger.", led.calls),
            (
                names.ROUTER_LEDGER_UNREACHABLE_TOTAL,
                "Times the ledger became unreachable (local share from then on).",
                led.unreachable,
            ),
        ):
            c = CounterMetricFamily(name.removesuffix("_total"), text, labels=["inference_pool"])
            c.add_metric(pool, value)
            yield c


def _gauge(name: str, text: str, labels: list[str], value: float) -> GaugeMetricFamily:
    g = GaugeMetricFamily(name, text, labels=["inference_pool"])
    g.add_metric(labels, value)
    return g
