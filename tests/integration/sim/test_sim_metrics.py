"""A real Prometheus scrapes the simulator: vLLM's colon names survive (text format)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import aiohttp
import pytest

from sluiceway.clock import RealClock
from sluiceway.observability import names
from sluiceway.sim import SimConfig, running_simulator


async def _query(http: aiohttp.ClientSession, prom_url: str, expr: str) -> list[Any]:
    async with http.get(prom_url + "/api/v1/query", params={"query": expr}) as resp:
        body = await resp.json()
    return list(body["data"]["result"])


@pytest.mark.prometheus
async def test_prometheus_reads_running_requests_by_vllm_name(
    prometheus_factory: Callable[..., Any],
) -> None:
    cfg = SimConfig(max_num_seqs=4, time_to_first_token=0.01, inter_token_latency=0.05)
    async with running_simulator(cfg, clock=RealClock()) as sim, aiohttp.ClientSession() as http:
        target = sim.urls[0].removeprefix("http://")
        prom = prometheus_factory([target])
        body = {"model": "sim-model", "prompt": "x", "max_tokens": 400, "stream": True}
        streams = [await http.post(sim.urls[0] + "/v1/completions", json=body) for _ in range(2)]
        expr = f'{names.VLLM_NUM_REQUESTS_RUNNING}{{model_name="sim-model"}}'
        result: list[Any] = []
        for _ in range(100):  # scrapes run every second; no event to wait on
            result = await _query(http, prom.url, expr)
            if result and result[0]["value"][1] == "2":
                break
            await asyncio.sleep(0.1)
        for stream in streams:
            stream.close()
    assert result and result[0]["value"][1] == "2"
