"""``sluiceway coordinator`` as a process: the guide's config file, served and drained."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import openai
import pytest
import yaml

from sluiceway.localservices import RedisServer
from sluiceway.sim import SimConfig, running_simulator

GUIDE = Path("tests/fixtures/guide/coordinator-config.yaml")


def guide_config(tmp_path: Path, redis_url: str, gateway: str) -> Path:
    doc = yaml.safe_load(GUIDE.read_text())
    doc["gateway"]["address"] = gateway
    doc["pipeline"]["steps"][0]["params"]["redis_url"] = redis_url
    path = tmp_path / "coordinator.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


async def start(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "sluiceway", "coordinator", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip


@pytest.mark.redis
async def test_the_guide_config_serves_passthrough_and_stops_on_sigterm(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    async with running_simulator(SimConfig(time_to_first_token=0.01)) as sim:
        config = guide_config(tmp_path, redis_server.url, sim.urls[0])
        proc = await start("--config", str(config), "--port", "0")
        try:
            assert proc.stdout is not None
            line = (await asyncio.wait_for(proc.stdout.readline(), 20)).decode().split()
            assert line[:2] == ["listening", "coordinator"]
            headers = {"x-llm-d-async-mode": "passthrough", "x-llm-d-tenant": "realtime"}
            async with openai.AsyncOpenAI(
                base_url=f"{line[2]}/v1", api_key="-", max_retries=0, default_headers=headers
            ) as live:
                reply = await live.completions.create(model="sim-model", prompt="x", max_tokens=2)
            assert reply.choices
        finally:
            proc.send_signal(signal.SIGTERM)
            code = await asyncio.wait_for(proc.wait(), 20)
        assert code == 0


async def test_a_bad_config_is_one_error_line_naming_the_field(tmp_path: Path) -> None:
    config = guide_config(tmp_path, "redis://127.0.0.1:1", "http://127.0.0.1:1")
    doc = yaml.safe_load(config.read_text())
    doc["pipeline"]["steps"][0]["params"]["wakeup_mode"] = "sometimes"
    config.write_text(yaml.safe_dump(doc))
    proc = await start("--config", str(config), "--port", "0")
    _, err = await asyncio.wait_for(proc.communicate(), 20)
    assert proc.returncode == 2
    text = err.decode()
    assert text.startswith("error: ") and "wakeup_mode" in text
    assert "Traceback" not in text


async def test_an_unreachable_redis_is_one_error_line(tmp_path: Path) -> None:
    config = guide_config(tmp_path, "redis://127.0.0.1:1", "http://127.0.0.1:1")
    proc = await start("--config", str(config), "--port", "0")
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 2
    assert "error: " in err.decode() and "Traceback" not in err.decode()
