"""Flow-control outcomes over HTTP: band full, TTL expiry, disconnect while queued, FC off."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from router_harness import (
    OBJECTIVE,
    body,
    fc_config,
    ident,
    queued,
    running_router,
    until,
)

from sluiceway.sim import SimConfig

SLOW = SimConfig(
    time_to_first_token=0.01,
    inter_token_latency=0.01,
    max_num_seqs=4,
    label_headers=(OBJECTIVE,),
)
REASON = "x-llm-d-request-dropped-reason"


async def _post(
    session: aiohttp.ClientSession,
    url: str,
    payload: dict[str, object],
    headers: dict[str, str] | None = None,
) -> tuple[int, str, str]:
    async with session.post(url + "/v1/completions", json=payload, headers=headers or {}) as r:
        return r.status, r.headers.get(REASON, ""), await r.text()


async def test_band_full_is_429_at_once() -> None:
    async with (
        running_router(fc_config(max_concurrency=1, band_max=2), sim=SLOW) as rig,
        aiohttp.ClientSession() as s,
    ):
        blocker = asyncio.create_task(_post(s, rig.url, body(200)))
        await until(lambda: rig.gateway.pool.healthy[0].inflight == 1)
        waiting = [asyncio.create_task(_post(s, rig.url, body())) for _ in range(2)]
        await until(lambda: queued(rig) == 2)
        status, reason, text = await _post(s, rig.url, body())
        assert (status, reason) == (429, "rejected-saturated")
        assert '"error"' in text
        blocker.cancel()
        assert [r[0] for r in await asyncio.gather(*waiting)] == [200, 200]


@pytest.mark.serial  # the blocker must outlast the TTL in wall time
async def test_ttl_expiry_is_429_ttl_expired() -> None:
    async with (
        running_router(fc_config(max_concurrency=1, ttl="10s"), sim=SLOW, scale=20) as rig,
        aiohttp.ClientSession() as s,
    ):
        blocker = asyncio.create_task(_post(s, rig.url, body(600)))
        await until(lambda: rig.gateway.pool.healthy[0].inflight == 1)
        # The header may only shorten the configured budget.
        short = await _post(s, rig.url, body(), {"x-llm-d-inference-ttl": "2s"})
        assert short[:2] == (429, "rejected-ttl-expired")
        blocker.cancel()


async def test_disconnect_while_queued_frees_the_slot_and_never_reaches_the_model() -> None:
    async with (
        running_router(fc_config(max_concurrency=1, band_max=1), sim=SLOW) as rig,
        aiohttp.ClientSession() as s,
    ):
        blocker = asyncio.create_task(_post(s, rig.url, body(100)))
        await until(lambda: rig.gateway.pool.healthy[0].inflight == 1)
        gone = asyncio.create_task(_post(s, rig.url, body(), ident("gone")))
        await until(lambda: queued(rig) == 1)
        gone.cancel()
        await until(lambda: queued(rig) == 0, what="the queue slot freed")
        # The band holds one request: the freed slot takes a new one at once.
        after = asyncio.create_task(_post(s, rig.url, body(), ident("after")))
        await until(lambda: queued(rig) == 1)
        assert (await blocker)[0] == 200
        assert (await after)[0] == 200
        seen = rig.sim.engines[0].max_running_by_label(OBJECTIVE)
        assert "gone" not in seen and seen.get("after") == 1


async def _saturation(session: aiohttp.ClientSession, url: str) -> float:
    async with session.get(url + "/metrics") as r:
        text = await r.text()
    sample = 'llm_d_epp_flow_control_pool_saturation{inference_pool="sluiceway",stage="effective"}'
    (value,) = [line.split()[-1] for line in text.splitlines() if line.startswith(sample)]
    return float(value)


async def test_saturation_gauge_is_the_pool_when_scraped() -> None:
    """A request dispatched from the queue when another finished counts at once: the gauge
    does not show the load from before the dispatch (which would open a gate on a full pool)."""
    async with (
        running_router(fc_config(max_concurrency=1), sim=SLOW) as rig,
        aiohttp.ClientSession() as s,
    ):
        assert await _saturation(s, rig.url) == 0.0
        short = asyncio.create_task(_post(s, rig.url, body(5)))
        await until(lambda: rig.gateway.pool.healthy[0].inflight == 1)
        long = asyncio.create_task(_post(s, rig.url, body(600)))
        await until(lambda: queued(rig) == 1)
        assert await _saturation(s, rig.url) == 1.0
        assert (await short)[0] == 200
        await until(lambda: queued(rig) == 0 and rig.gateway.pool.healthy[0].inflight == 1)
        assert await _saturation(s, rig.url) == 1.0  # the long one, dispatched after short
        long.cancel()
        await until(lambda: rig.gateway.pool.healthy[0].inflight == 0)
        assert await _saturation(s, rig.url) == 0.0


LEGACY = """
apiVersion: llm-d.ai/v1
kind: EndpointPickerConfig
plugins:
- type: concurrency-detector
  parameters: {maxConcurrency: 1}
flowControl:
  saturationDetector: {pluginRef: concurrency-detector}
"""


async def test_flow_control_off_sheds_only_sheddable_when_saturated() -> None:
    objectives = {"batch": -10, "normal": 0}
    async with running_router(LEGACY, sim=SLOW, objectives=objectives) as rig:
        assert rig.gateway.controller is None
        async with aiohttp.ClientSession() as s:
            blocker = asyncio.create_task(_post(s, rig.url, body(100)))
            await until(lambda: rig.gateway.pool.healthy[0].inflight == 1)
            status, reason, text = await _post(s, rig.url, body(), ident("batch"))
            assert (status, reason) == (429, "")
            assert "sheddable request dropped" in text
            # Non-sheddable requests pass and queue in the model server.
            assert (await _post(s, rig.url, body(), ident("normal")))[0] == 200
            assert (await blocker)[0] == 200
            # Not saturated any more: the sheddable request passes too.
            assert (await _post(s, rig.url, body(), ident("batch")))[0] == 200


async def test_metrics_names_and_deprecated_twins() -> None:
    async with (
        running_router(fc_config(), sim=SLOW, objectives={"hi": 100}) as rig,
        aiohttp.ClientSession() as s,
    ):
        assert (await _post(s, rig.url, body(), ident("hi", "team-a")))[0] == 200
        async with s.get(rig.url + "/metrics") as r:
            text = await r.text()
        async with s.get(rig.url + "/readyz") as r:
            assert r.status == 200
        async with s.get(rig.url + "/healthz") as r:
            assert r.status == 200
    for prefix in ("llm_d_epp_", "inference_extension_"):
        assert (
            f'{prefix}flow_control_pool_saturation{{inference_pool="sluiceway",stage="effective"}}'
            in text
        )
        assert f"{prefix}flow_control_request_queue_duration_seconds_bucket" in text
        assert f"{prefix}flow_control_queue_size" in text
    assert (
        'llm_d_epp_flow_control_requests_total{inference_pool="sluiceway",outcome="Dispatched",'
        'priority="100"} 1.0'
    ) in text
    assert "inference_extension_flow_control_requests_total" not in text
    assert 'fairness_id="team-a"' in text
