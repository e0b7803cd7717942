"""``sluiceway processor`` / ``publish`` as processes over the sqlite transport: health,
readiness, metrics, results, and a clean exit on SIGTERM."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from pathlib import Path

import aiohttp
import pytest
from processor_harness import wait_until

from sluiceway.broker.base import BrokerOptions
from sluiceway.broker.sqlite import open_sqlite_broker
from sluiceway.clock import RealClock
from sluiceway.localservices import RedisServer
from sluiceway.sim import SimConfig, running_simulator
from sluiceway.wire import decode_result

pytestmark = [pytest.mark.serial, pytest.mark.slow]

SCALE = 10.0


async def run_cli(log: Path, *args: str) -> asyncio.subprocess.Process:
    with log.open("ab") as out:
        return await asyncio.create_subprocess_exec(
            sys.executable, "-m", "sluiceway", *args, stdout=out, stderr=out
        )


async def ready(http: aiohttp.ClientSession, url: str) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + 30
    while loop.time() < end:
        async with http.get(f"{url}/readyz") as resp:
            if resp.status == 200:
                return
        await asyncio.sleep(0.05)
    raise AssertionError("processor never became ready")


async def test_processor_process_serves_results_and_drains_on_sigterm(tmp_path: Path) -> None:
    anchor = time.time()
    clock = RealClock(scale=SCALE, anchor=anchor)
    db, ports, log = tmp_path / "queue.db", tmp_path / "ports.json", tmp_path / "cli.log"
    timing = ["--time-scale", str(SCALE), "--time-anchor", str(anchor)]
    async with running_simulator(SimConfig(model="guide-model"), clock=clock) as sim:
        config = {
            "path": str(db),
            "result_queue_name": "results-list",
            "queues": [
                {
                    "queue_name": "team-batch",
                    "igw_base_url": sim.urls[0],
                    "labels": {"tier": "batch"},
                }
            ],
        }
        proc = await run_cli(
            log, "processor", "--transport", "sqlite", "--transport-config", json.dumps(config),
            "--port", "0", "--ports-file", str(ports), *timing,
        )  # fmt: skip
        try:
            await wait_until(ports.exists, within=30)
            url = json.loads(ports.read_text())["processor"]
            async with aiohttp.ClientSession() as http:
                await ready(http, url)
                async with http.get(f"{url}/healthz") as resp:
                    assert resp.status == 200
                publisher = await run_cli(
                    log, "publish", "batch", "2", "--transport", "sqlite", "--url", str(db),
                    "--model", "guide-model", *timing,
                )  # fmt: skip
                assert await asyncio.wait_for(publisher.wait(), 30) == 0
                broker = await open_sqlite_broker(BrokerOptions(url=str(db)))
                try:
                    raws = [await broker.pop_result("results-list", 20.0) for _ in range(2)]
                finally:
                    await broker.aclose()
                records = [decode_result(raw or "") for raw in raws]
                assert [r.status_code for r in records] == [200, 200], log.read_text()
                async with http.get(f"{url}/metrics") as resp:
                    text = await resp.text()
                assert 'llm_d_async_async_successful_requests_total{pool_name="default"' in text
            proc.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(proc.wait(), 30) == 0, log.read_text()
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()


@pytest.mark.redis
async def test_processor_process_picks_up_a_new_queue_from_its_watched_file(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    from sluiceway.broker.base import BrokerOptions as Options
    from sluiceway.broker.redis import open_redis_broker

    anchor = time.time()
    clock = RealClock(scale=SCALE, anchor=anchor)
    transport, ports, log = tmp_path / "t.json", tmp_path / "ports.json", tmp_path / "cli.log"
    timing = ["--time-scale", str(SCALE), "--time-anchor", str(anchor)]
    async with running_simulator(SimConfig(model="guide-model"), clock=clock) as sim:

        def write(queues: list[str]) -> None:
            qs = [{"queue_name": q, "igw_base_url": sim.urls[0]} for q in queues]
            transport.write_text(
                json.dumps(
                    {"url": redis_server.url, "queues": qs, "result_queue_name": "results-list"}
                )
            )

        write(["team-a"])
        proc = await run_cli(
            log, "processor", "--transport", "redis-sortedset", "--transport-config-file",
            str(transport), "--transport-config-watch-interval", "1s", "--port", "0",
            "--ports-file", str(ports), *timing,
        )  # fmt: skip
        broker = await open_redis_broker(Options(url=redis_server.url))
        try:
            await wait_until(ports.exists, within=30)
            async with aiohttp.ClientSession() as http:
                await ready(http, json.loads(ports.read_text())["processor"])
            write(["team-a", "team-b"])
            publisher = await run_cli(
                log, "publish", "b", "1", "--queue", "team-b", "--url", redis_server.url,
                "--model", "guide-model", *timing,
            )  # fmt: skip
            assert await asyncio.wait_for(publisher.wait(), 30) == 0
            raw = await broker.pop_result("results-list", 20.0)
            assert raw is not None and decode_result(raw).status_code == 200, log.read_text()
            proc.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(proc.wait(), 30) == 0
        finally:
            await broker.aclose()
            if proc.returncode is None:
                proc.kill()
                await proc.wait()


@pytest.mark.redis
async def test_the_charts_deprecated_flags_run_and_a_second_sigterm_stops_at_once(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    """Started as upstream's Helm chart starts it; then SIGTERM (drain, 10 minutes allowed)
    and SIGTERM again: the in-flight request goes back to its queue and the process exits."""
    from sluiceway.broker.base import BrokerOptions as Options
    from sluiceway.broker.redis import open_redis_broker

    anchor = time.time()
    clock = RealClock(scale=SCALE, anchor=anchor)
    ports, log = tmp_path / "ports.json", tmp_path / "cli.log"
    timing = ["--time-scale", str(SCALE), "--time-anchor", str(anchor)]
    slow = SimConfig(model="guide-model", time_to_first_token=0.1, inter_token_latency=1.0)
    async with running_simulator(slow, clock=clock) as sim:
        proc = await run_cli(
            log, "processor", "--message-queue-impl=redis-sortedset",
            f"--redis.url={redis_server.url}", f"--redis.ss.igw-base-url={sim.urls[0]}",
            "--redis.ss.request-path-url", "", "--redis.ss.request-queue-name", "chart-q",
            "--redis.ss.result-queue-name", "results-list", "--drain-timeout", "10m",
            "--port", "0", "--ports-file", str(ports), *timing,
        )  # fmt: skip
        broker = await open_redis_broker(Options(url=redis_server.url))
        try:
            await wait_until(ports.exists, within=30)
            async with aiohttp.ClientSession() as http:
                await ready(http, json.loads(ports.read_text())["processor"])
            publisher = await run_cli(
                log, "publish", "a", "1", "--queue", "chart-q", "--url", redis_server.url,
                "--model", "guide-model", *timing,
            )  # fmt: skip
            assert await asyncio.wait_for(publisher.wait(), 30) == 0
            engine = sim.engines[0]
            await wait_until(lambda: engine.num_running == 1, within=30)
            proc.send_signal(signal.SIGTERM)
            await wait_until(lambda: "draining" in log.read_text(), within=30)
            assert proc.returncode is None and engine.num_running == 1
            proc.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(proc.wait(), 15) == 0, log.read_text()
            text = log.read_text()
            assert "forced stop" in text and "deprecated flag" in text
            assert await broker.backlog("chart-q") == 1
            assert await broker.result_count("results-list") == 0
        finally:
            await broker.aclose()
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
