"""The dashboard's router row against a live router: the guide's evictable flow-control config
in front of the simulator, scraped by a private Prometheus. Batch work fills the pool, realtime
requests evict some of it and others queue, and then every router query returns data except
the few listed with the reason they stay empty in this run."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from integration.router.router_harness import (
    GUIDE_OBJECTIVES,
    body,
    ident,
    running_router,
    until,
)
from sluiceway.localservices import PrometheusServer
from sluiceway.sim import SimConfig

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "sluiceway.json"
ROUTER_ROW = "Router: bands, saturation, evictions"
ROUTER = """
apiVersion: llm-d.ai/v1
kind: EndpointPickerConfig
featureGates: [flowControl]
plugins:
- type: round-robin-fairness-policy
- type: concurrency-detector
  parameters: {maxConcurrency: 4}
flowControl:
  saturationDetector: {pluginRef: concurrency-detector}
  enableEviction: true
  defaultPriorityBand: {fairnessPolicyRef: round-robin-fairness-policy}
"""
# (panel title, refId) -> why it has no series in this run.
EXPECTED_EMPTY = {
    ("Stale endpoints", "A"): "exported by the utilization detector; this run uses concurrency",
}


def _router_targets() -> list[tuple[str, str, str]]:
    row, found = "", []
    for panel in json.loads(DASHBOARD.read_text())["panels"]:
        if panel["type"] == "row":
            row = panel["title"]
        elif row == ROUTER_ROW:
            found += [(panel["title"], t["refId"], t["expr"]) for t in panel["targets"]]
    return found


def _query(server: PrometheusServer, expr: str) -> list[Any]:
    url = f"{server.url}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=10) as resp:
        doc = json.loads(resp.read())
    assert doc["status"] == "success", (expr, doc)
    result: list[Any] = doc["data"]["result"]
    return result


async def _eventually(check: Callable[[], bool], what: str, within: float = 60.0) -> None:
    end = time.monotonic() + within
    while not await asyncio.to_thread(check):
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.5)  # Prometheus scrapes on its own 1 s period


async def _post(session: aiohttp.ClientSession, url: str, headers: dict[str, str], n: int) -> int:
    async with session.post(url + "/v1/completions", json=body(n), headers=headers) as resp:
        await resp.read()
        return resp.status


@pytest.mark.slow
@pytest.mark.prometheus
async def test_router_row_returns_data_from_a_live_router(
    prometheus_factory: Callable[..., PrometheusServer],
) -> None:
    sim = SimConfig(time_to_first_token=0.02, inter_token_latency=0.02, max_num_seqs=8)
    async with (
        running_router(ROUTER, sim=sim, objectives=GUIDE_OBJECTIVES) as rig,
        aiohttp.ClientSession() as session,
    ):
        prom = prometheus_factory(
            [rig.url.split("//", 1)[1]], target_labels={"inference_pool": "llm-d-router"}
        )
        batch = [
            asyncio.create_task(_post(session, rig.url, ident("overflow-batch", "batch"), 200))
            for _ in range(6)
        ]
        engine = rig.sim.engines[0]
        await until(lambda: engine.num_running >= 4, what="the pool full of batch work")
        live = [
            asyncio.create_task(_post(session, rig.url, ident("reserved-interactive", "rt"), 4))
            for _ in range(3)
        ]
        assert set(await asyncio.gather(*live)) == {200}
        outcomes = await asyncio.gather(*batch)
        assert 429 in outcomes  # some batch work was evicted to make room
        done = "sum(llm_d_epp_flow_control_revocations_issued_total)"
        await _eventually(lambda: bool(_query(prom, done)), "evictions scraped")
        born = "min(count_over_time(llm_d_epp_flow_control_requests_total[1m]))"
        await _eventually(
            lambda: float((_query(prom, born) or [{"value": [0, "0"]}])[0]["value"][1]) >= 3,
            "three scrapes of the router",
        )
        empty = [(t, r) for t, r, e in _router_targets() if not _query(prom, e)]
    assert set(empty) <= set(EXPECTED_EMPTY), sorted(set(empty) - set(EXPECTED_EMPTY))
