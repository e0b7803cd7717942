"""Pool-gate cost per message and shared-signal cost per period.

1. Per message: the worker's gate step (budget, in-flight target, apply, release) for
   ``wait-on-refuse`` over ``prometheus-query`` whose signal the shared refresher already
   holds, beside the same chain over ``constant`` measured in the same run. Target: the metric
   gate adds at most 20 microseconds per message.
2. Per period: sixteen gates over one query against a loopback Prometheus stand-in; the
   refresher should cost one query per refresh period whatever the number of gates.

Default: short. ``--full``: more messages and periods.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Mapping
from typing import Any

from aiohttp import web
from prometheus_client import CollectorRegistry

from sluiceway.clock import RealClock
from sluiceway.gates.base import Gate, GateRequest, Holdings, apply_chain, budget_allows
from sluiceway.gates.context import GAUGES_SERVICE, SIGNALS_SERVICE, GateContext
from sluiceway.gates.factory import build_gate
from sluiceway.ports import free_port
from sluiceway.processor.metrics import ProcessorMetrics
from sluiceway.signals.refresher import SignalHub
from sluiceway.signals.settings import PrometheusSettings

WORKERS = 16
QUERY = 'clamp(1 - sum(vllm:num_requests_running{inference_pool="p"})/4, 0, 1)'
LABELS = {"queue_id": "", "queue_name": "", "pool_name": "teams"}


async def _fake_prometheus(counter: list[int]) -> tuple[web.AppRunner, str]:
    async def query(request: web.Request) -> web.Response:
        counter[0] += 1
        result = [{"metric": {}, "value": [time.time(), "0.75"]}]
        return web.json_response(
            {"status": "success", "data": {"resultType": "vector", "result": result}}
        )

    app = web.Application()
    app.router.add_get("/api/v1/query", query)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner, f"http://127.0.0.1:{port}"


def _context(hub: SignalHub, clock: RealClock) -> GateContext:
    metrics = ProcessorMetrics(CollectorRegistry())
    services: Mapping[str, object] = {SIGNALS_SERVICE: hub, GAUGES_SERVICE: metrics}
    return GateContext(clock=clock, workers=WORKERS, services=services, labels=LABELS)


def _wrapped(gate_type: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"gate": json.dumps({"gate_type": gate_type, "gate_params": params})}


async def _per_message(gate: Gate, clock: RealClock, messages: int) -> float:
    """Microseconds per message for the worker's gate step."""
    request = GateRequest("r", "t", "h", clock.now() + 600, clock.now() + 300)
    started = time.perf_counter()
    for _ in range(messages):
        now = clock.now()
        budget = await gate.budget(now)
        if budget_allows(budget, 0, WORKERS):
            holdings = Holdings()
            await apply_chain([gate], request, holdings, now)
            await holdings.release_all()
    return (time.perf_counter() - started) / messages * 1e6


async def _message_cost(messages: int, rounds: int) -> tuple[float, float]:
    counter = [0]
    runner, url = await _fake_prometheus(counter)
    clock = RealClock()
    hub = SignalHub(clock, PrometheusSettings(url=url, cache_ttl=3600))
    ctx = _context(hub, clock)
    metric = build_gate("wait-on-refuse", _wrapped("prometheus-query", {"query": QUERY}), ctx)
    constant = build_gate("wait-on-refuse", _wrapped("constant", {}), ctx)
    assert metric is not None and constant is not None
    await metric.budget(clock.now())  # the refresher's first read; later messages use it
    base, gated = [], []
    for _ in range(rounds):
        base.append(await _per_message(constant, clock, messages))
        gated.append(await _per_message(metric, clock, messages))
    await metric.aclose()
    await constant.aclose()
    await hub.aclose()
    await runner.cleanup()
    return min(base), min(gated)


async def _period_cost(periods: int) -> tuple[int, int]:
    counter = [0]
    runner, url = await _fake_prometheus(counter)
    clock = RealClock(scale=20.0)  # a 1 s scaled period is 50 ms of wall time
    hub = SignalHub(clock, PrometheusSettings(url=url, cache_ttl=1.0))
    gates = [
        build_gate("prometheus-query", {"query": QUERY}, _context(hub, clock))
        for _ in range(WORKERS)
    ]
    for gate in gates:
        assert gate is not None
        await gate.budget(clock.now())
    (refresher,) = hub.refreshers.values()
    start_reads = refresher.reads
    started = clock.now()
    while refresher.reads - start_reads < periods:
        for gate in gates:
            assert gate is not None
            await gate.budget(clock.now())
        await asyncio.sleep(0.005)
    elapsed_periods = round((clock.now() - started) / refresher.period)
    for gate in gates:
        assert gate is not None
        await gate.aclose()
    await hub.aclose()
    await runner.cleanup()
    return counter[0], elapsed_periods


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench gates")
    parser.add_argument("--full", action="store_true")
    args = parser.parse_args(argv)
    messages, rounds, periods = (50_000, 5, 40) if args.full else (10_000, 3, 10)
    base, gated = asyncio.run(_message_cost(messages, rounds))
    added = gated - base
    print(f"pool gate step, wait-on-refuse(constant):         {base:7.2f} us/message (baseline)")
    print(f"pool gate step, wait-on-refuse(prometheus-query): {gated:7.2f} us/message")
    print(
        f"added by the metric gate: {added:.2f} us/message (target <= 20); ratio {gated / base:.2f}"
    )
    queries, elapsed = asyncio.run(_period_cost(periods))
    print(f"16 gates over one query: {queries} queries in ~{elapsed} refresh periods")
    ok = added <= 20.0 and queries <= elapsed + 2
    print("ok" if ok else "MISSED TARGET")
    return 0 if ok else 1
