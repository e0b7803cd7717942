"""``sluiceway router`` as a process in front of the simulator; SIGTERM drains and exits 0."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import aiohttp

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
