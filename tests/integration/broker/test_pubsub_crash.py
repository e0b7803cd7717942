"""Nothing is lost on Pub/Sub: a processor killed mid-run (SIGKILL) leaves every request to a
successor, and a crash between a result's publish and its ack repeats that result with the
same ``request_token``. Time scale 1: these tests restart processes and wait out leases."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import aiohttp
import pytest
from prometheus_client import CollectorRegistry
from pubsub_harness import Topics, guide_settings, new_topics, team_queues

from sluiceway.broker.base import BrokerOptions
from sluiceway.broker.pubsub import open_pubsub_broker
from sluiceway.broker.pubsub_api import GrpcPubSub
from sluiceway.clock import RealClock
from sluiceway.gates.quota_store import MemoryQuotaStore
from sluiceway.localservices import PubSubEmulator
from sluiceway.processor.service import Processor
from sluiceway.sim import SimConfig, running_simulator
from sluiceway.wire import ResultRecord

pytestmark = [pytest.mark.pubsub, pytest.mark.serial, pytest.mark.slow]

LEASE = 3  # seconds: how long a dead processor's messages stay leased


async def start_processor(
    log: Path, ports: Path, topics: Topics, url: str
) -> asyncio.subprocess.Process:
    config = topics.transport_settings(["batch"], claim_lease_ttl_seconds=LEASE)
    config["topics"][0].update(igw_base_url=url, labels={"tier": "batch"})
    forget(ports)
    with log.open("ab") as out:
        return await asyncio.create_subprocess_exec(
            sys.executable, "-m", "sluiceway", "processor", "--transport", "gcp-pubsub",
            "--transport-config", json.dumps(config), "--concurrency", "4",
            "--port", "0", "--ports-file", str(ports),
            stdout=out, stderr=out,
        )  # fmt: skip


def forget(ports: Path) -> None:
    ports.unlink(missing_ok=True)


def processor_url(ports: Path) -> str | None:
    return str(json.loads(ports.read_text())["processor"]) if ports.exists() else None


def text_of(log: Path) -> str:
    return log.read_text()


async def until_ready(ports: Path, log: Path) -> None:
    end = time.monotonic() + 60
    async with aiohttp.ClientSession() as http:
        while time.monotonic() < end:
            url = processor_url(ports)
            if url is not None:
                async with http.get(f"{url}/readyz") as resp:
                    if resp.status == 200:
                        return
            await asyncio.sleep(0.1)  # a child process offers nothing to await
    raise AssertionError(f"processor never became ready:\n{text_of(log)}")


def first_by_id(results: Sequence[ResultRecord]) -> dict[str, ResultRecord]:
    firsts: dict[str, ResultRecord] = {}
    for res in results:
        firsts.setdefault(res.id, res)
    return firsts


def assert_repeats_share_the_token(results: Sequence[ResultRecord]) -> None:
    firsts = first_by_id(results)
    for res in results:
        assert res.request_token == firsts[res.id].request_token, res


async def test_a_killed_processor_loses_nothing(
    tmp_path: Path, pubsub_emulator: PubSubEmulator
) -> None:
    topics = await new_topics(["batch"])
    log, ports = tmp_path / "processor.log", tmp_path / "ports.json"
    sim_config = SimConfig(max_num_seqs=4, time_to_first_token=0.05, inter_token_latency=0.05)
    async with running_simulator(sim_config) as sim:
        first = await start_processor(log, ports, topics, sim.urls[0])
        try:
            await until_ready(ports, log)
            ids = await topics.publish("batch", 30, now=time.time(), max_tokens=16)
            before = await topics.results(4, within=60)
            first.send_signal(signal.SIGKILL)
            await first.wait()
            second = await start_processor(log, ports, topics, sim.urls[0])
            try:
                after: list[ResultRecord] = []
                while len(first_by_id([*before, *after])) < len(ids):
                    after.extend(await topics.results(1, within=60))
            finally:
                second.send_signal(signal.SIGTERM)
                assert await asyncio.wait_for(second.wait(), 60) == 0, text_of(log)
        finally:
            if first.returncode is None:
                first.kill()
                await first.wait()
    results = [*before, *after, *await topics.drain_results(quiet_for=1.0)]
    assert set(first_by_id(results)) == set(ids)
    assert all(res.status_code == 200 for res in results)
    assert_repeats_share_the_token(results)
    await topics.aclose()


class CrashBeforeTheFirstAck(GrpcPubSub):
    """The process dies right after its first result publish: that ack never happens."""

    def __init__(self) -> None:
        super().__init__()
        self.crashed = False

    async def acknowledge(self, subscription: str, ack_ids: Sequence[str]) -> None:
        if not self.crashed:
            self.crashed = True
            raise ConnectionError("the process died before acknowledging")
        await super().acknowledge(subscription, ack_ids)


async def test_a_crash_between_publish_and_ack_repeats_the_result_with_its_token(
    pubsub_emulator: PubSubEmulator,
) -> None:
    topics = await new_topics(["batch"])
    clock = RealClock()
    options = BrokerOptions(
        settings=topics.transport_settings(["batch"], claim_lease_ttl_seconds=LEASE), clock=clock
    )
    api = CrashBeforeTheFirstAck()
    broker = await open_pubsub_broker(options, api)
    async with running_simulator() as sim:
        await topics.publish("batch", 1, now=clock.now())
        settings = guide_settings(topics, team_queues(topics, sim.urls[0], ["batch"]), workers=1)
        store = MemoryQuotaStore()
        async with Processor(
            settings, broker, clock=clock, registry=CollectorRegistry(), quota_store=lambda a: store
        ):
            first, again = await topics.results(2, within=LEASE + 20)
    await broker.aclose()
    await topics.aclose()
    assert api.crashed
    assert first.id == again.id == "batch-0000"
    assert first.request_token == again.request_token != ""
