"""``sluiceway processor`` as an operator runs it: what its log says at start-up, per request,
while draining, while the broker is away, and ``--wait-for-broker``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cli_harness import Child, redis_on, sluiceway

from sluiceway.broker.base import BrokerOptions
from sluiceway.broker.keys import member_digest
from sluiceway.broker.sqlite import open_sqlite_broker
from sluiceway.ports import free_port
from sluiceway.sim import SimConfig, running_simulator

pytestmark = [pytest.mark.serial, pytest.mark.slow]


def _transport(tmp_path: Path, upstream: str, pool: str = "default", **broker: str) -> Path:
    queues = [
        {"queue_name": "team-a", "igw_base_url": upstream, "labels": {"tier": "interactive"}},
        {"queue_name": "team-b", "igw_base_url": upstream, "worker_pool_id": pool},
    ]
    path = tmp_path / "transport.json"
    path.write_text(json.dumps({**broker, "result_queue_name": "results-list", "queues": queues}))
    return path


async def test_start_up_requests_and_drain_are_logged_as_json(tmp_path: Path) -> None:
    db = tmp_path / "q.db"
    pools = tmp_path / "pools.json"
    pools.write_text(json.dumps([{"id": "gpu", "workers": 2}]))
    async with running_simulator(SimConfig(model="m")) as sim:
        config = _transport(tmp_path, sim.urls[0], "gpu", path=str(db))
        child = Child(
            tmp_path / "processor.log", "processor", "--transport", "sqlite",
            "--transport-config-file", str(config), "--pool-config-file", str(pools),
            "--port", "0", "--log-format", "json", "--log-level", "debug",
        )  # fmt: skip
        try:
            await child.logged("processor started")
            published = sluiceway("publish", "a", "2", "--model", "m", "--transport", "sqlite",
                                  "--url", str(db))  # fmt: skip
            assert published.code == 0, published
            first, second = published.out.split()
            await child.logged(f"result of {second}")
            await child.logged(f"result of {first}")
            broker = await open_sqlite_broker(BrokerOptions(url=str(db)))
            try:
                await broker.enqueue("team-a", [("{not json", 1e12)])
            finally:
                await broker.aclose()
            await child.logged(f"moved unreadable entry sha256:{member_digest('{not json')} "
                               "of team-a aside")  # fmt: skip
            status = sluiceway("status", "team-a", "--transport", "sqlite", "--url", str(db),
                               "--json")  # fmt: skip
            assert json.loads(status.out)["queues"][0]["invalid"] == 1
            assert await child.stopped() == 0
        finally:
            child.kill()
    lines = [json.loads(line) for line in child.text.splitlines() if line.startswith("{")]
    messages = [line["message"] for line in lines]
    assert all({"time", "level", "logger", "message"} <= set(line) for line in lines)
    assert f"broker: sqlite {db}" in messages
    assert any(m.startswith("queue team-a: pool default, tier interactive, upstream " +
                            sim.urls[0]) for m in messages)  # fmt: skip
    assert (
        "queue team-b: pool gpu, tier batch (no tier label), upstream "
        + sim.urls[0]
        + "/v1/completions"
        in messages
    )
    assert "pool gpu: 2 workers" in messages and "pool default: 64 workers" in messages
    for step in (f"claimed {first} from team-a", f"dispatching {first} to ", f"result of {first}"):
        assert any(m.startswith(step) for m in messages), step
    assert "drained: 0 finished, 0 returned to their queues (0 buffered, 0 aborted)" in messages


@pytest.mark.redis
async def test_a_broker_outage_is_two_warnings_and_no_traceback(tmp_path: Path) -> None:
    port = free_port()
    server = redis_on(port, tmp_path)
    async with running_simulator(SimConfig(model="m")) as sim:
        config = _transport(tmp_path, sim.urls[0], url=f"redis://127.0.0.1:{port}/0")
        child = Child(
            tmp_path / "processor.log", "processor", "--transport-config-file", str(config),
            "--port", "0",
        )  # fmt: skip
        try:
            await child.logged("processor started")
            server.terminate()
            server.wait(timeout=20)
            await child.logged("broker lost")
            # Stay down for several poll rounds of every background loop.
            with pytest.raises(AssertionError):
                await child.logged("never logged", within=4)
            server = redis_on(port, tmp_path)
            await child.logged("broker is back", within=40)
            published = sluiceway(
                "publish", "a", "--model", "m", "--url", f"redis://127.0.0.1:{port}/0"
            )
            assert published.code == 0
            await child.logged("processor started")
            assert await child.stopped() == 0
        finally:
            child.kill()
            server.kill()
            server.wait()
    text = child.text
    assert "Traceback" not in text, text
    warnings = [line for line in text.splitlines() if " WARNING " in line]
    ours = [line for line in warnings if "broker lost" in line or "broker is back" in line]
    assert len(ours) == 2, text
    assert "broker lost" in ours[0] and "broker is back" in ours[1]
    # Besides the pair, at most the one line saying keyspace events stopped (wake-ups fall
    # back to polling): nothing repeats per poll.
    assert len(warnings) <= 3, text


@pytest.mark.redis
async def test_wait_for_broker_waits_and_without_it_one_error_line(tmp_path: Path) -> None:
    port = free_port()
    config = _transport(tmp_path, "http://127.0.0.1:1", url=f"redis://127.0.0.1:{port}/0")
    ran = sluiceway("processor", "--transport-config-file", str(config), "--port", "0")
    assert ran.code == 2 and "Traceback" not in ran.err, ran
    assert [line for line in ran.err.splitlines() if line.startswith("error:")], ran.err
    child = Child(
        tmp_path / "processor.log", "processor", "--transport-config-file", str(config),
        "--port", "0", "--wait-for-broker", "60",
    )  # fmt: skip
    server: subprocess.Popen[bytes] | None = None
    try:
        await child.logged("waiting up to 60 s for the broker")
        server = redis_on(port, tmp_path)
        await child.logged("processor started")
        assert await child.stopped() == 0
    finally:
        child.kill()
        if server is not None:
            server.kill()
            server.wait()
