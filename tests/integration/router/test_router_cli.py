"""``sluiceway router`` as a process in front of the simulator; SIGTERM drains and exits 0 (with a
mounted coordinator too, its held waits answered at once)."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import aiohttp
import yaml

from sluiceway.config.documents import read_document
from sluiceway.sim import SimConfig, running_simulator

GUIDE = Path(__file__).parents[2] / "fixtures" / "guide"


async def test_cli_serves_the_guide_values_and_objectives(tmp_path: Path) -> None:
    async with running_simulator(SimConfig(time_to_first_token=0.001)) as sim:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "sluiceway",
            "router",
            "--config",
            str(GUIDE / "router-flow-control-evictable.yaml"),
            "--endpoints",
            ",".join(sim.urls),
            "--objectives",
            str(GUIDE / "inferenceobjectives.yaml"),
            "--pool-name",
            "llm-d-router",
            "--port",
            "0",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            assert proc.stdout is not None
            line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode().split()
            assert line[:2] == ["listening", "router"]
            url = line[2]
            async with aiohttp.ClientSession() as http:
                payload = {"model": "sim-model", "prompt": "hi", "max_tokens": 2}
                headers = {"x-gateway-inference-objective": "reserved-interactive"}
                async with http.post(url + "/v1/completions", json=payload, headers=headers) as r:
                    assert r.status == 200
                async with http.get(url + "/metrics") as r:
                    text = await r.text()
            assert 'priority="100"' in text
        finally:
            proc.send_signal(signal.SIGTERM)
            code = await asyncio.wait_for(proc.wait(), 30)
        assert proc.stderr is not None
        err = (await proc.stderr.read()).decode()
        assert code == 0, err
        assert "trustedSources is not set" in err


async def test_cli_bad_config_exits_2_naming_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "epp.yaml"
    bad.write_text(
        "apiVersion: llm-d.ai/v1\nkind: EndpointPickerConfig\nfeatureGates: [flowControl]\n"
        "flowControl: {usageLimitPolicyPluginRef: nope}\n"
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "sluiceway",
        "router",
        "--config",
        str(bad),
        "--endpoints",
        "http://127.0.0.1:9",
        "--port",
        "0",
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 2
    assert "usageLimitPolicyPluginRef" in err.decode()


async def test_cli_with_a_keyed_coordinator_guards_limits_and_drains_at_once(
    tmp_path: Path,
) -> None:
    doc = read_document(GUIDE / "coordinator-config.yaml")
    params = doc["pipeline"]["steps"][0]["params"]
    params.update({"redis_url": "memory://", "api_keys": {"k1": "premium"}})
    config = tmp_path / "coordinator.yaml"
    config.write_text(yaml.safe_dump(doc))
    async with running_simulator(SimConfig(time_to_first_token=0.001)) as sim:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            *("-m", "sluiceway", "router", "--endpoints", sim.urls[0], "--port", "0"),
            *("--coordinator-config", str(config), "--max-body-bytes", "1000"),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            assert proc.stdout is not None
            url = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode().split()[2]
            key = {"authorization": "Bearer k1"}
            wait = {**key, "x-llm-d-async-mode": "wait"}
            big = {"model": "sim-model", "prompt": "x" * 2000}
            async with aiohttp.ClientSession() as http:
                payload = {"model": "sim-model", "prompt": "hi", "max_tokens": 1}
                async with http.post(url + "/v1/completions", json=payload) as r:
                    assert r.status == 401
                async with http.post(url + "/v1/completions", json=payload, headers=key) as r:
                    assert r.status == 200
                for headers in (key, wait):  # the router's limit, and the coordinator's
                    async with http.post(url + "/v1/completions", json=big, headers=headers) as r:
                        assert r.status == 413
                held = asyncio.create_task(
                    http.post(url + "/v1/completions", json=payload, headers=wait)
                )
                await asyncio.sleep(0.5)
                proc.send_signal(signal.SIGTERM)
                async with await asyncio.wait_for(held, 5) as r:
                    assert r.status == 202
        finally:
            if proc.returncode is None:
                proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(proc.wait(), 10)
        assert proc.stderr is not None
        err = (await proc.stderr.read()).decode()
        assert code == 0, err
        assert "with the coordinator's api_keys" in err and "are trusted" not in err
