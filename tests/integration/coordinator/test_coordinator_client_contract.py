"""What the coordinator's answers tell a client, over HTTP and through the official ``openai``
client: the request id on every answer (the same one the model server got), and a cancelled
request fetched by id as a conflict the client does not retry."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable

import aiohttp
import openai
import pytest
from coordinator_rig import running_front

from sluiceway.sim import SimConfig
from sluiceway.wire import ErrorCode, decode_result
from sluiceway.wire.headers import FAIRNESS_ID, OBJECTIVE

MODEL = "sim-model"
REQUEST_ID = "x-request-id"
LABELS = SimConfig(
    max_num_seqs=8,
    time_to_first_token=0.05,
    inter_token_latency=0.02,
    label_headers=(OBJECTIVE, FAIRNESS_ID, REQUEST_ID),  # what the model server received
)


async def until(check: Callable[[], Awaitable[object]], *, within: float = 10.0) -> None:
    """Wait for a broker state no event announces, bounded in wall time."""
    loop = asyncio.get_running_loop()
    end = loop.time() + within
    while not await check():
        if loop.time() > end:
            raise AssertionError("state not reached in time")
        await asyncio.sleep(0.01)


def client(url: str, mode: str, **headers: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        base_url=f"{url}/v1",
        api_key="unused",
        max_retries=0,
        default_headers={"x-llm-d-tenant": "premium", "x-llm-d-async-mode": mode, **headers},
    )


async def _answered_id(url: str, mode: str, **headers: str) -> str:
    async with client(url, mode, **headers) as c:
        raw = await c.completions.with_raw_response.create(model=MODEL, prompt="hi", max_tokens=2)
    assert raw.status_code == 200
    return raw.headers[REQUEST_ID]


async def test_every_mode_answers_with_the_callers_id_or_the_one_it_went_by() -> None:
    async with running_front(sim_config=LABELS) as front:
        assert await _answered_id(front.url, "wait", **{REQUEST_ID: "wait-7"}) == "wait-7"
        assert await _answered_id(front.url, "passthrough", **{REQUEST_ID: "live-7"}) == "live-7"
        minted_wait = await _answered_id(front.url, "wait")
        minted_live = await _answered_id(front.url, "passthrough")
    ids = [seen[REQUEST_ID] for seen in front.seen]
    # Queued requests reach the model as the processor's "<tenant>:<id>", live ones as sent.
    assert ids == ["premium:wait-7", "live-7", f"premium:{minted_wait}", minted_live]
    assert len(minted_wait) == len(minted_live) == 36


@pytest.mark.parametrize(
    ("method", "path", "headers", "status"),
    [
        ("POST", "/v1/completions", {"x-llm-d-async-mode": "bogus"}, 400),
        ("GET", "/v1/completions", {"x-llm-d-async-mode": "wait"}, 405),
        ("POST", "/v1/completions", {"x-llm-d-async-mode": "wait", REQUEST_ID: "a b"}, 400),
        ("GET", "/healthz", {}, 200),
        ("GET", "/v1/models", {}, 200),
        ("POST", "/v1/completions", {}, 200),  # no mode: forwarded untouched
    ],
)
async def test_the_coordinators_own_answers_carry_an_id(
    method: str, path: str, headers: dict[str, str], status: int
) -> None:
    body = json.dumps({"model": MODEL, "prompt": "hi", "max_tokens": 1}).encode()
    async with running_front(start_processor=False) as front, aiohttp.ClientSession() as http:
        asked = {**headers, "content-type": "application/json"}
        async with http.request(method, front.url + path, data=body, headers=asked) as reply:
            assert reply.status == status
            answered = reply.headers[REQUEST_ID]
    if headers.get(REQUEST_ID) == "a b":  # refused, and not echoed: a fresh id instead
        assert len(answered) == 36
    else:
        assert answered == headers.get(REQUEST_ID, answered) and len(answered) >= 36


async def test_a_cancelled_request_fetched_by_id_is_a_conflict_not_retried() -> None:
    async with running_front(start_processor=False) as front:
        body = json.dumps({"model": MODEL, "prompt": "hi", "max_tokens": 3}).encode()
        headers = {
            "x-llm-d-tenant": "batch",
            "x-llm-d-async-mode": "wait",
            REQUEST_ID: "gone-1",
            "content-type": "application/json",
        }
        box = "results:req:batch:gone-1"
        async with aiohttp.ClientSession() as http:

            async def wait() -> None:
                async with http.post(front.url + "/v1/completions", data=body, headers=headers):
                    pass

            held = asyncio.create_task(wait())
            await until(lambda: front.broker.backlog("team-batch"))
            (entry,) = await front.broker.peek("team-batch", 1)
            token = str(json.loads(entry.member)["internal"]["request_token"])
            held.cancel()  # the client leaves: its request is cancelled
            await asyncio.gather(held, return_exceptions=True)
            await until(lambda: front.broker.is_cancelled("batch:gone-1", token))
        await front.processor.start()
        try:
            await until(lambda: front.broker.peek_result(box))
        finally:
            await front.processor.stop()
        raw = await front.broker.peek_result(box)
        assert raw is not None and decode_result(raw).error_code == ErrorCode.CANCELLED
        sdk = openai.AsyncOpenAI(
            base_url=f"{front.url}/v1",
            api_key="unused",
            max_retries=2,  # the SDK's default: it would retry a 409 unless told not to
            default_headers={"x-llm-d-tenant": "batch"},
        )
        async with sdk:
            with pytest.raises(openai.ConflictError) as err:
                await sdk.get("/requests/gone-1", cast_to=object)
    # Asked once: a retry would have found the result gone (410, not ConflictError).
    assert err.value.status_code == 409 and err.value.code == "CANCELLED"
    assert err.value.response.headers["x-should-retry"] == "false"
    assert err.value.response.headers[REQUEST_ID] == "gone-1"
