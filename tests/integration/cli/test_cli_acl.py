"""The least privilege docs/operations.md gives, tried as written: the processor, the coordinator
and every command each run with exactly its ACL user on a Redis whose CONFIG they may not use,
and a user without a needed grant is refused at start with the grant named."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from pathlib import Path

import aiohttp
import pytest
import redis
from cli_harness import Child, assert_one_error, sluiceway

from sluiceway.localservices import RedisServer
from sluiceway.sim import SimConfig, running_simulator

pytestmark = [pytest.mark.redis, pytest.mark.serial]

DOCS = Path(__file__).resolve().parents[3] / "docs" / "operations.md"
QUEUE = "team-a"
PASSWORD = "acl-pw-4417"


def documented_acls() -> dict[str, str]:
    """Each ``ACL SETUSER`` line of docs/operations.md: user -> its rules."""
    found = re.findall(r"^ACL SETUSER (sluiceway-[a-z]+) (.+)$", DOCS.read_text(), re.M)
    return {user: rules.replace("PASSWORD", PASSWORD) for user, rules in found}


def create_users(server: RedisServer, acls: dict[str, str]) -> dict[str, str]:
    """The users, made on ``server`` exactly as documented; their URLs."""
    admin = redis.Redis(host=server.host, port=server.port)
    try:
        for user, rules in acls.items():
            admin.execute_command("ACL", "SETUSER", user, *rules.replace("QUEUE", QUEUE).split())
    finally:
        admin.close()
    return {user: f"redis://{user}:{PASSWORD}@127.0.0.1:{server.port}/0" for user in acls}


def test_the_page_documents_one_user_per_component() -> None:
    acls = documented_acls()
    assert sorted(acls) == ["sluiceway-cli", "sluiceway-coordinator", "sluiceway-processor"]
    assert all("-@dangerous" in rules and "~QUEUE" in rules for rules in acls.values())


async def test_every_component_works_with_exactly_its_documented_acl(
    redis_factory: Callable[..., RedisServer], tmp_path: Path
) -> None:
    server = redis_factory(keyspace_events="KEA")
    urls = create_users(server, documented_acls())
    cli = ["--url", urls["sluiceway-cli"]]
    async with running_simulator(SimConfig(time_to_first_token=0.01)) as sim:
        transport = tmp_path / "transport.json"
        queue = {"queue_name": QUEUE, "igw_base_url": sim.urls[0]}
        transport.write_text(json.dumps({"url": urls["sluiceway-processor"], "queues": [queue]}))
        coordinator = tmp_path / "coordinator.yaml"
        coordinator.write_text(
            f"redis_url: {urls['sluiceway-coordinator']}\nupstream_url: {sim.urls[0]}\n"
            f"default_queue: {QUEUE}\nwakeup_mode: notify\n"
        )
        processor = Child(tmp_path / "processor.log", "processor", "--transport-config-file",
                          str(transport), "--port", "0")  # fmt: skip
        front = Child(tmp_path / "coordinator.log", "coordinator", "--config", str(coordinator),
                      "--port", "0")  # fmt: skip
        try:
            await processor.logged("processor started")
            url = (await front.logged(r"listening \S+ http://\S+", regex=True)).split()
            front_url = next(word for word in url if word.startswith("http://"))
            # the simulator runs on this loop: each command runs in a thread meanwhile
            published = await asyncio.to_thread(
                sluiceway, "publish", "a", "2", "--model", "sim-model", "--max-tokens", "2", *cli
            )
            assert published.code == 0, published
            first, second = published.out.split()
            got = await asyncio.to_thread(
                sluiceway, "results", "--result-queue", "result-list", "--id", first,
                "--id", second, "--follow", "--count", "2", *cli,
            )  # fmt: skip
            assert got.code == 0 and first in got.out and second in got.out, got
            status = await asyncio.to_thread(sluiceway, "status", QUEUE, *cli)
            assert status.code == 0 and QUEUE in status.out, status
            cancel = await asyncio.to_thread(sluiceway, "cancel", "unknown-id", *cli)
            assert cancel.code == 1 and "not found" in cancel.out, cancel
            headers = {"x-llm-d-async-mode": "wait", "x-llm-d-tenant": "a"}
            body = {"model": "sim-model", "prompt": "hello", "max_tokens": 2}
            async with (
                aiohttp.ClientSession() as session,
                session.post(f"{front_url}/v1/completions", json=body, headers=headers) as reply,
            ):
                assert reply.status == 200, await reply.text()
        finally:
            assert await front.stopped() == 0
            assert await processor.stopped() == 0
    for log in (processor.text, front.text):
        assert "NOPERM" not in log and "no permissions" not in log, log
        assert "WARNING" not in log and "ERROR" not in log, log
        assert "probed with a test key, CONFIG denied" in log, log


async def test_a_processor_without_a_needed_grant_never_starts(
    redis_factory: Callable[..., RedisServer], tmp_path: Path
) -> None:
    server = redis_factory(keyspace_events="KEA")
    rules = documented_acls()["sluiceway-processor"] + " -script|load"
    urls = create_users(server, {"sluiceway-processor": rules})
    transport = tmp_path / "transport.json"
    queue = {"queue_name": QUEUE, "igw_base_url": "http://127.0.0.1:1"}
    transport.write_text(json.dumps({"url": urls["sluiceway-processor"], "queues": [queue]}))
    ran = sluiceway("processor", "--transport-config-file", str(transport), "--port", "0")
    assert_one_error(ran, "grant +script|load")
    assert PASSWORD not in ran.err and "processor started" not in ran.err
