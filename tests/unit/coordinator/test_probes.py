"""The probes: ``/readyz`` turns 503 on a drain or a broker that does not answer; every probe
takes GET and HEAD only."""

from __future__ import annotations

import json

from prometheus_client import CollectorRegistry, Counter
from starlette.requests import Request

from sluiceway.broker.memory import MemoryBroker
from sluiceway.coordinator.probes import Probes
from sluiceway.errors import BrokerError

REQUEST = Request({"type": "http", "method": "GET", "path": "/", "headers": []})


class _DownBroker(MemoryBroker):
    async def ping(self) -> None:
        raise BrokerError("redis ping failed")


def probes(broker: MemoryBroker, *, draining: bool = False) -> Probes:
    registry = CollectorRegistry()
    Counter("probe_test", "a metric to scrape", registry=registry).inc()
    return Probes(broker, registry, draining=lambda: draining)


async def test_ready_healthy_and_scraped() -> None:
    up = probes(MemoryBroker())
    assert (await up.healthz(REQUEST)).status_code == 200
    ready = await up.readyz(REQUEST)
    assert (ready.status_code, json.loads(ready.body)) == (200, {"status": "ready"})
    assert b"probe_test_total 1.0" in (await up.metrics(REQUEST)).body


async def test_not_ready_while_draining_or_while_the_broker_is_down() -> None:
    draining = await probes(MemoryBroker(), draining=True).readyz(REQUEST)
    assert (draining.status_code, json.loads(draining.body)["status"]) == (503, "draining")
    down = await probes(_DownBroker()).readyz(REQUEST)
    assert down.status_code == 503 and "redis ping failed" in json.loads(down.body)["error"]


def test_each_probe_takes_get_and_head() -> None:
    routes = probes(MemoryBroker()).routes()
    assert set(routes) == {"/healthz", "/readyz", "/metrics"}
    assert all(tuple(methods) == ("GET", "HEAD") for methods in routes.values())
