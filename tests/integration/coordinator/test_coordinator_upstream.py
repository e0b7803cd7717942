"""A gateway the coordinator cannot reach is a 502 in the OpenAI envelope that does not tell
the client where the gateway is (the address goes to the log only)."""

from __future__ import annotations

import logging

import aiohttp
import pytest
from coordinator_rig import guide_params

from sluiceway.broker.memory import MemoryBroker
from sluiceway.clock import RealClock
from sluiceway.coordinator.forwarding import HttpForwarder
from sluiceway.coordinator.server import build_coordinator
from sluiceway.gates.quota_store import MemoryQuotaStore
from sluiceway.ports import free_port
from sluiceway.serving import start_server


async def test_an_unreachable_gateway_is_a_502_that_names_no_address(
    caplog: pytest.LogCaptureFixture,
) -> None:
    port = free_port()
    forwarder = HttpForwarder(f"http://127.0.0.1:{port}", timeout=5)
    coordinator = build_coordinator(
        guide_params(),
        broker=MemoryBroker(),
        quota_store=MemoryQuotaStore(),
        forwarder=forwarder,
        clock=RealClock(),
    )
    server = await start_server(coordinator.app(), name="coordinator")
    headers = {"x-llm-d-async-mode": "passthrough", "x-llm-d-tenant": "premium"}
    body = {"model": "sim-model", "prompt": "hi", "max_tokens": 3}
    try:
        with caplog.at_level(logging.WARNING):
            async with (
                aiohttp.ClientSession() as http,
                http.post(server.url + "/v1/completions", json=body, headers=headers) as resp,
            ):
                status, text = resp.status, await resp.text()
    finally:
        await server.stop()
        await forwarder.aclose()
    assert status == 502 and '"error"' in text
    assert str(port) not in text and "127.0.0.1" not in text
    assert str(port) in caplog.text  # the operator still sees where
