"""A coordinator with API keys mounted in the router: the router's own routes need a key too,
and a keyed caller that skips the mode header cannot pick its objective or fairness id."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import aiohttp
import openai
import pytest
from router_harness import (
    FAIRNESS,
    GUIDE_OBJECTIVES,
    OBJECTIVE,
    Rig,
    body,
    coordinator_params,
    running_router,
)

from sluiceway.broker.memory import MemoryBroker
from sluiceway.coordinator.server import mount_coordinator
from sluiceway.gates.quota_store import MemoryQuotaStore
from sluiceway.sim import SimConfig

PLAIN = "apiVersion: llm-d.ai/v1\nkind: EndpointPickerConfig\nfeatureGates: [flowControl]\n"
KEY = "k-premium"
SIM = SimConfig(
    time_to_first_token=0.005,
    inter_token_latency=0.001,
    label_headers=(OBJECTIVE, FAIRNESS, "authorization", "x-api-key"),
)


@contextlib.asynccontextmanager
async def keyed_router() -> AsyncIterator[tuple[Rig, list[dict[str, str]]]]:
    """The router with a keyed coordinator mounted; yields it and the labels of every request
    the model server started."""
    async with running_router(PLAIN, sim=SIM, objectives=GUIDE_OBJECTIVES) as rig:
        seen: list[dict[str, str]] = []
        rig.sim.engines[0].labels.subscribe(
            lambda delta, labels: seen.append(dict(labels)) if delta > 0 else None
        )
        mount_coordinator(
            rig.app,
            coordinator_params(api_keys={KEY: "premium"}),
            broker=MemoryBroker(),
            quota_store=MemoryQuotaStore(),
            clock=rig.clock,
        )
        yield rig, seen


async def test_without_a_key_the_direct_path_is_401_in_the_openai_envelope() -> None:
    async with keyed_router() as (rig, seen), aiohttp.ClientSession() as s:
        forged = {OBJECTIVE: "reserved-interactive", FAIRNESS: "premium"}
        async with s.post(rig.url + "/v1/completions", json=body(), headers=forged) as r:
            assert r.status == 401
            assert (await r.json())["error"] == {
                "message": "missing or unknown API key",
                "type": "AuthenticationError",
                "code": 401,
            }
        async with s.get(rig.url + "/v1/models", headers={"x-api-key": "nope"}) as r:
            assert r.status == 401
        async with s.get(rig.url + "/healthz") as r:
            assert r.status == 200
        async with openai.AsyncOpenAI(base_url=rig.base, api_key="nope", max_retries=0) as client:
            with pytest.raises(openai.AuthenticationError):
                await client.completions.create(model="sim-model", prompt="hi", max_tokens=1)
        assert seen == []


async def test_with_a_key_the_callers_identity_headers_and_the_key_stay_behind() -> None:
    async with keyed_router() as (rig, seen):
        forged = {OBJECTIVE: "reserved-interactive", FAIRNESS: "someone-else"}
        async with openai.AsyncOpenAI(
            base_url=rig.base, api_key=KEY, max_retries=0, default_headers=forged
        ) as client:
            reply = await client.completions.create(model="sim-model", prompt="hi", max_tokens=2)
            assert reply.choices[0].text
            # through the coordinator (mode header): its stamps count, the key is checked there
            live = await client.completions.create(
                model="sim-model",
                prompt="hi",
                max_tokens=2,
                extra_headers={"x-llm-d-async-mode": "passthrough"},
            )
            assert live.choices[0].text
        assert seen == [{}, {OBJECTIVE: "reserved-interactive", FAIRNESS: "premium"}]
