"""``sluiceway sim`` as a process: ports announced, one engine per port."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import aiohttp


async def test_cli_serves_k_instances_and_writes_the_ports_file(tmp_path: Path) -> None:
    ports_file = tmp_path / "ports.json"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "sluiceway", "sim", "--port", "0", "--instances", "2",
        "--profile", "guide-pool", "--time-scale", "20", "--label-header", "x-team",
        "--max-num-seqs", "3", "--ports-file", str(ports_file),
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        lines = [(await proc.stdout.readline()).decode().split() for _ in range(2)]
        assert [line[:2] for line in lines] == [["listening", "sim-0"], ["listening", "sim-1"]]
        urls = [line[2] for line in lines]
        async with aiohttp.ClientSession() as http:
            for url in urls:
                async with http.get(url + "/admin/config") as resp:
                    cfg = await resp.json()
                assert cfg["max_num_seqs"] == 3 and cfg["label_headers"] == ["x-team"]
            body = {"model": "sim-model", "prompt": "hi", "max_tokens": 2}
            async with http.post(urls[1] + "/v1/completions", json=body) as resp:
                assert resp.status == 200
        # PortAnnouncer prints each line just before rewriting the file; by now both are in.
        assert json.loads(ports_file.read_text()) == {"sim-0": urls[0], "sim-1": urls[1]}
    finally:
        proc.terminate()
        await proc.wait()
