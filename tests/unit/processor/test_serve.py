"""``run_processor``: the HTTP servers stop when the processor fails to start, and the stop
signals (first: drain, second: force)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from sluiceway.clock import RealClock
from sluiceway.config.processor_settings import load_processor_settings
from sluiceway.processor.serve import Endpoints, StopSignals, run_processor
from sluiceway.processor.service import Processor


def test_the_first_signal_drains_the_second_forces() -> None:
    signals = StopSignals()
    signals.received()
    assert signals.drain.is_set() and not signals.force.is_set()
    signals.received()
    assert signals.force.is_set()


def _port_open(url: str) -> bool:
    host, port = url.removeprefix("http://").split(":")
    with socket.socket() as sock:
        return sock.connect_ex((host, int(port))) == 0


async def test_servers_stop_when_the_processor_fails_to_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    announced: list[str] = []

    async def failing_start(self: Processor) -> None:
        ports = json.loads((tmp_path / "ports.json").read_text())
        announced.append(ports["processor"])
        assert _port_open(ports["processor"])
        raise RuntimeError("start failed")

    monkeypatch.setattr(Processor, "start", failing_start)
    transport = {"path": str(tmp_path / "q.db"), "queues": []}
    config = load_processor_settings(
        transport="sqlite", transport_config=json.dumps(transport), env={}
    ).value
    endpoints = Endpoints(port=0, ports_file=tmp_path / "ports.json")
    with pytest.raises(RuntimeError, match="start failed"):
        await run_processor(config, clock=RealClock(), endpoints=endpoints)
    assert announced and not _port_open(announced[0])
