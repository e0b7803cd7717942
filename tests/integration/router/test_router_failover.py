"""Failover: with one of two model servers killed, requests and streams that meet the dead one
before their first byte are retried on the other (none gets 502, none is cut before it
starts); without retries the same kill fails some. The retries are counted and logged."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import openai
import pytest
from router_harness import picker_config, sample, scrape, serving_router, sim_process, until

from sluiceway.clock import RealClock
from sluiceway.router.app import RouterApp
from sluiceway.router.build import build_router
from sluiceway.router.settings import RouterSettings

PLAIN = "apiVersion: llm-d.ai/v1\nkind: EndpointPickerConfig\nfeatureGates: [flowControl]\n"
RETRIES = "sluiceway_router_upstream_retries_total"
FAILURES = "sluiceway_router_upstream_failures_total"
N = 20


@contextlib.asynccontextmanager
async def two_servers(
    folder: Path, retries: int
) -> AsyncIterator[tuple[str, RouterApp, asyncio.subprocess.Process]]:
    """The router over two simulator processes, checking health too rarely to notice a death
    (only a refused connection takes an endpoint out): its URL, itself, the first process."""
    async with (
        sim_process(folder, name="a") as (url_a, proc_a),
        sim_process(folder, name="b") as (url_b, _),
    ):
        settings = RouterSettings(
            endpoints=(url_a, url_b), health_interval=60, upstream_retries=retries
        )
        app, _ = build_router(picker_config(PLAIN), settings, RealClock())
        async with serving_router(app) as url:
            yield url, app, proc_a


async def _kill(proc: asyncio.subprocess.Process) -> None:
    proc.send_signal(signal.SIGKILL)
    await proc.wait()


async def _complete(client: openai.AsyncOpenAI) -> int:
    out = await client.completions.create(model="sim-model", prompt="hi", max_tokens=4)
    assert out.usage is not None
    return out.usage.completion_tokens


async def _stream(client: openai.AsyncOpenAI) -> int:
    stream = await client.completions.create(
        model="sim-model", prompt="hi", max_tokens=4, stream=True
    )
    return sum([1 async for chunk in stream if chunk.choices and chunk.choices[0].text])


async def _burst(url: str) -> list[int | BaseException]:
    """N plain requests and N streams at once: tokens received, or what each raised."""
    async with openai.AsyncOpenAI(base_url=url + "/v1", api_key="-", max_retries=0) as client:
        calls = [_complete(client) for _ in range(N)] + [_stream(client) for _ in range(N)]
        return await asyncio.gather(*calls, return_exceptions=True)


async def test_with_one_server_killed_no_request_or_stream_fails(tmp_path: Path) -> None:
    async with two_servers(tmp_path, retries=2) as (url, app, dead):
        await _kill(dead)
        results = await _burst(url)
        assert results == [4] * (2 * N)
        metrics = await scrape(url)
        assert sample(metrics, FAILURES, phase="before_response") == 0
        assert sample(metrics, FAILURES, phase="mid_stream") == 0
        assert sample(metrics, RETRIES) >= 1
        assert len(app.gateway.pool.healthy) == 1  # the refusal took the dead one out
        assert all(m.inflight == 0 for m in app.gateway.pool.members.values())


async def test_without_retries_the_same_kill_fails_requests(tmp_path: Path) -> None:
    async with two_servers(tmp_path, retries=0) as (url, _, dead):
        await _kill(dead)
        results = await _burst(url)
        failed = [r for r in results if isinstance(r, BaseException)]
        assert failed and all(isinstance(r, openai.InternalServerError) for r in failed)
        assert all(r.status_code == 502 for r in failed)  # type: ignore[union-attr]
        metrics = await scrape(url)
        assert sample(metrics, FAILURES, phase="before_response") == len(failed)
        assert sample(metrics, RETRIES) == 0


async def test_requests_running_on_a_server_that_dies_are_answered_by_the_other(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with two_servers(tmp_path, retries=2) as (url, app, dead):
        dead_url = next(iter(app.gateway.pool.members))
        async with openai.AsyncOpenAI(base_url=url + "/v1", api_key="-", max_retries=0) as client:
            calls = [
                asyncio.create_task(
                    client.completions.create(model="sim-model", prompt="hi", max_tokens=40)
                )
                for _ in range(6)
            ]
            members = list(app.gateway.pool.members.values())
            await until(lambda: all(m.inflight >= 2 for m in members), what="both generating")
            await _kill(dead)
            answers = await asyncio.gather(*calls)
        assert all(a.usage is not None and a.usage.completion_tokens == 40 for a in answers)
        metrics = await scrape(url)
        assert sample(metrics, FAILURES, phase="before_response") == 0
        assert sample(metrics, RETRIES) >= 2
        retried = [r for r in caplog.records if "retrying on" in r.getMessage()]
        assert len(retried) == sample(metrics, RETRIES)
        assert all(dead_url in r.getMessage() for r in retried)
