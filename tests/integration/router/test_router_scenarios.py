"""Scenarios E (strict bands + fairness), F (in-flight eviction) and G (holdback) over HTTP."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiohttp
import openai
import orjson
import pytest
from router_harness import (
    GUIDE_OBJECTIVES,
    OBJECTIVE,
    body,
    fc_config,
    ident,
    queued,
    running_router,
    until,
)

from sluiceway.sim import SimConfig

GUIDE = Path(__file__).parents[2] / "fixtures" / "guide"
REASON = "x-llm-d-request-dropped-reason"


async def _complete(
    s: aiohttp.ClientSession,
    url: str,
    headers: dict[str, str],
    done: list[str],
    tag: str,
    max_tokens: int = 1,
) -> int:
    async with s.post(url + "/v1/completions", json=body(max_tokens), headers=headers) as r:
        await r.read()
        done.append(tag)
        return r.status


async def test_scenario_e_strict_bands_round_robin_fcfs() -> None:
    sim = SimConfig(time_to_first_token=0.005, inter_token_latency=0.01, max_num_seqs=4)
    objectives = {"realtime": 100, "batch": -10}
    async with running_router(fc_config(max_concurrency=1), sim=sim, objectives=objectives) as rig:
        order: list[str] = []
        async with aiohttp.ClientSession() as s:
            blocker = asyncio.create_task(_complete(s, rig.url, {}, order, "blocker", 60))
            await until(lambda: rig.gateway.pool.healthy[0].inflight == 1)
            plan = [
                ("d0", None, "d"),
                ("a0", None, "a"),
                ("a1", None, "a"),
                ("b0", None, "b"),
                ("a2", None, "a"),
                ("b1", None, "b"),
                ("c0", "realtime", "c"),
                ("low", "batch", "a"),
            ]
            tasks = []
            for n, (tag, objective, tenant) in enumerate(plan, start=1):
                headers = ident(objective, tenant)
                tasks.append(asyncio.create_task(_complete(s, rig.url, headers, order, tag)))
                await until(lambda n=n: queued(rig) == n)  # type: ignore[misc]
            assert await blocker == 200
            assert set(await asyncio.gather(*tasks)) == {200}
    # Highest band first; round robin across tenants (in the order they became active);
    # FCFS within a tenant; the sheddable band last.
    assert order == ["blocker", "c0", "d0", "a0", "b0", "a1", "b1", "a2", "low"]


async def _stream(
    s: aiohttp.ClientSession, url: str, objective: str, events: list[bytes], max_tokens: int = 400
) -> tuple[int, str]:
    payload = body(max_tokens, stream=True)
    async with s.post(url + "/v1/completions", json=payload, headers=ident(objective)) as r:
        async for line in r.content:
            if line.strip():
                events.append(line.strip())
        return r.status, r.headers.get(REASON, "")


def _evicted(events: list[bytes]) -> bool:
    if not events or not events[-1].startswith(b"data: {"):
        return False
    last = orjson.loads(events[-1][len(b"data: ") :])
    return isinstance(last, dict) and last.get("error", {}).get("code") == "evicted"


EVICTION = """
apiVersion: llm-d.ai/v1
kind: EndpointPickerConfig
featureGates: [flowControl]
plugins:
- type: concurrency-detector
  parameters: {maxConcurrency: 4}
flowControl:
  saturationDetector: {pluginRef: concurrency-detector}
  enableEviction: true
"""


@pytest.mark.serial  # bounds the slot's release in scaled time
async def test_scenario_f_eviction_frees_the_simulator_slot_and_realtime_starts() -> None:
    sim = SimConfig(
        time_to_first_token=0.005,
        inter_token_latency=0.01,
        max_num_seqs=4,
        label_headers=(OBJECTIVE,),
    )
    scale = 2.0
    async with running_router(EVICTION, sim=sim, objectives=GUIDE_OBJECTIVES, scale=scale) as rig:
        engine = rig.sim.engines[0]
        streams: dict[str, list[bytes]] = {}
        async with aiohttp.ClientSession() as s:
            tasks: dict[str, asyncio.Task[tuple[int, str]]] = {}
            fill = [
                ("keep-30", "reserved-batch"),
                ("old-10", "overflow-batch"),
                ("async-5", "overflow-async"),
                ("new-10", "overflow-batch"),
            ]
            for n, (tag, objective) in enumerate(fill, start=1):
                streams[tag] = []
                tasks[tag] = asyncio.create_task(_stream(s, rig.url, objective, streams[tag]))
                await until(lambda n=n: engine.num_running == n)  # type: ignore[misc]
            await until(lambda: all(streams[t] for t in streams), what="every stream started")
            started = rig.clock.monotonic()
            realtime: list[bytes] = []
            rt = asyncio.create_task(_stream(s, rig.url, "reserved-interactive", realtime, 5))
            await until(lambda: _evicted(streams["new-10"]), what="the evicted event")
            await until(
                lambda: engine.running_by_label(OBJECTIVE).get("overflow-batch") == 1,
                what="the simulator freeing the slot",
            )
            assert rig.clock.monotonic() - started < 1.0  # within one scaled second
            assert await rt == (200, "")
            assert realtime[-1] == b"data: [DONE]"
            # The client retries the evicted request; it completes.
            retry: list[bytes] = []
            assert (await _stream(s, rig.url, "overflow-batch", retry, 5))[0] == 200
            assert retry[-1] == b"data: [DONE]"
            for tag in ("keep-30", "old-10", "async-5"):
                assert not _evicted(streams[tag])
                tasks[tag].cancel()
        assert streams["new-10"][-1] != b"data: [DONE]"
        controller = rig.gateway.controller
        assert controller is not None and controller.evictor.issued == 1


async def test_eviction_before_the_first_byte_is_429_evicted() -> None:
    sim = SimConfig(time_to_first_token=0.005, inter_token_latency=0.01, max_num_seqs=4)
    async with (
        running_router(EVICTION, sim=sim, objectives=GUIDE_OBJECTIVES) as rig,
        aiohttp.ClientSession() as s,
    ):

        async def plain(objective: str) -> tuple[int, str, str]:
            payload = body(300)
            async with s.post(
                rig.url + "/v1/completions", json=payload, headers=ident(objective)
            ) as r:
                return r.status, r.headers.get(REASON, ""), await r.text()

        victims = [asyncio.create_task(plain("overflow-batch")) for _ in range(4)]
        await until(lambda: rig.sim.engines[0].num_running == 4)
        order: list[str] = []
        assert await _complete(s, rig.url, ident("reserved-interactive"), order, "rt") == 200
        done, _ = await asyncio.wait(victims, return_when=asyncio.FIRST_COMPLETED)
        assert [t.result() for t in done] == [(429, "evicted", "request evicted by flow control")]
        for t in victims:
            t.cancel()


async def test_the_openai_client_sees_an_eviction_as_a_rate_limit_either_way() -> None:
    sim = SimConfig(time_to_first_token=0.005, inter_token_latency=0.01, max_num_seqs=4)
    async with running_router(EVICTION, sim=sim, objectives=GUIDE_OBJECTIVES) as rig:
        client = openai.AsyncOpenAI(base_url=rig.base, api_key="x", max_retries=0)
        started: list[int] = []

        async def stream(n: int) -> None:
            events = await client.completions.create(
                model="sim-model",
                prompt="hi",
                max_tokens=400,
                stream=True,
                extra_headers=ident("overflow-batch"),
            )
            async for _ in events:
                if n not in started:
                    started.append(n)

        async def plain() -> None:
            await client.completions.create(
                model="sim-model",
                prompt="hi",
                max_tokens=300,
                extra_headers=ident("overflow-batch"),
            )

        async def realtime() -> None:
            await client.completions.create(
                model="sim-model",
                prompt="hi",
                max_tokens=2,
                extra_headers=ident("reserved-interactive"),
            )

        async def evicted_one(tasks: list[asyncio.Task[None]]) -> BaseException:
            await realtime()
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            (err,) = [t.exception() for t in done]
            assert err is not None
            return err

        try:
            streams = [asyncio.create_task(stream(n)) for n in range(4)]
            await until(lambda: len(started) == 4, what="every stream's first token")
            mid = await evicted_one(streams)
            engine = rig.sim.engines[0]
            await until(lambda: engine.num_running == 0, what="the streams' slots freed")
            plains = [asyncio.create_task(plain()) for _ in range(4)]
            await until(lambda: engine.num_running == 4)
            before = await evicted_one(plains)
        finally:
            await client.close()
    # Once streaming: the error event, raised by the SDK with its type and code.
    assert isinstance(mid, openai.APIError) and type(mid) is openai.APIError  # no status
    assert (mid.type, mid.code) == ("RateLimitError", "evicted")
    assert "evicted" in mid.message
    # Before the first byte: a 429, upstream's literal body, the reason in its header.
    assert isinstance(before, openai.RateLimitError)
    head = before.response.headers
    assert head[REASON] == "evicted" and int(head["retry-after"]) >= 1
    assert before.response.text == "request evicted by flow control"
    assert int(head["x-llm-d-flow-queue-duration-ms"]) >= 0 and head["x-request-id"]


async def test_scenario_g_holdback_keeps_headroom_without_cancelling() -> None:
    from sluiceway.router.build import load_picker_config

    config, _ = load_picker_config(GUIDE / "router-flow-control-holdback.yaml")
    assert config.flow_control is not None
    sim = SimConfig(
        time_to_first_token=0.005,
        inter_token_latency=0.01,
        max_num_seqs=10,
        label_headers=(OBJECTIVE,),
    )
    text = (GUIDE / "router-flow-control-holdback.yaml").read_text()
    epp = _embedded(text)
    async with running_router(epp, sim=sim, objectives=GUIDE_OBJECTIVES) as rig:
        engine = rig.sim.engines[0]
        controller = rig.gateway.controller
        assert controller is not None
        async with aiohttp.ClientSession() as s:
            events: dict[int, list[bytes]] = {i: [] for i in range(8)}
            batch = [
                asyncio.create_task(_stream(s, rig.url, "overflow-batch", events[i], 300))
                for i in range(8)
            ]
            await until(lambda: queued(rig) == 3 and engine.num_running == 5)
            # Ceilings 1.0 ... 0.5 over seven bands (band 0 included): overflow-batch stops at 5
            # of 10 slots; realtime finds headroom at once and nothing is cancelled.
            order: list[str] = []
            assert await _complete(s, rig.url, ident("reserved-interactive"), order, "rt") == 200
            assert engine.max_running_by_label(OBJECTIVE)["overflow-batch"] == 5
            assert controller.evictor.issued == 0
            assert queued(rig) == 3
            for t in batch:
                t.cancel()


def _embedded(values_text: str) -> str:
    import yaml

    doc: dict[str, Any] = yaml.safe_load(values_text)
    custom = doc["router"]["epp"]["pluginsCustomConfig"]
    return str(custom["flow-control-plugins.yaml"])
