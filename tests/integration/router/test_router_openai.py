"""The official openai client against the router, in front of the simulator."""

from __future__ import annotations

import asyncio
from typing import Any

import openai
import pytest
from router_harness import fc_config, running_router

from sluiceway.sim import SimConfig

FAST = SimConfig(time_to_first_token=0.01, inter_token_latency=0.002, max_num_seqs=8)


async def test_async_client_streaming_and_not() -> None:
    async with running_router(fc_config(), sim=FAST) as rig:
        client = openai.AsyncOpenAI(base_url=rig.base, api_key="x", max_retries=0)
        try:
            out = await client.completions.create(model="sim-model", prompt="hello", max_tokens=5)
            assert out.usage is not None and out.usage.completion_tokens == 5
            chat = await client.chat.completions.create(
                model="sim-model", messages=[{"role": "user", "content": "hi"}], max_tokens=4
            )
            assert chat.choices[0].message.content
            stream = await client.chat.completions.create(
                model="sim-model",
                messages=[{"role": "user", "content": "hi"}],
                max_tokens=6,
                stream=True,
            )
            chunks = [c async for c in stream]
            # The router asked upstream for usage but the client did not: no usage chunk.
            assert all(c.usage is None for c in chunks)
            assert sum(1 for c in chunks if c.choices and c.choices[0].delta.content) == 6
        finally:
            await client.close()


def _sync_calls(base: str) -> tuple[int, int]:
    client = openai.OpenAI(base_url=base, api_key="x", max_retries=0)
    try:
        out = client.completions.create(model="sim-model", prompt="hello", max_tokens=3)
        stream = client.completions.create(
            model="sim-model",
            prompt="hello",
            max_tokens=3,
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = list(stream)
        usage = [c.usage for c in chunks if c.usage is not None]
        assert out.usage is not None
        return out.usage.completion_tokens, usage[-1].completion_tokens
    finally:
        client.close()


async def test_sync_client_and_usage_kept_when_asked() -> None:
    async with running_router(fc_config(), sim=FAST) as rig:
        plain, streamed = await asyncio.to_thread(_sync_calls, rig.base)
        assert (plain, streamed) == (3, 3)


async def test_error_answer_becomes_the_sdk_exception() -> None:
    async with running_router(fc_config(), sim=FAST) as rig:
        client = openai.AsyncOpenAI(base_url=rig.base, api_key="x", max_retries=0)
        try:
            with pytest.raises(openai.NotFoundError) as err:
                await client.completions.create(model="no-such-model", prompt="x", max_tokens=2)
            assert err.value.status_code == 404
            with pytest.raises(openai.RateLimitError) as rate:
                await client.completions.create(
                    model="sim-model",
                    prompt="x",
                    max_tokens=2,
                    extra_headers={"X-Return-Error": "429"},
                )
            assert rate.value.status_code == 429
        finally:
            await client.close()


async def test_usage_reaches_flow_control_even_when_stripped() -> None:
    async with running_router(fc_config(), sim=FAST) as rig:
        adapter = rig.gateway.admission.adapter
        assert adapter is not None
        seen: list[object] = []
        finished = adapter.finished

        def spy(request_id: str, usage: Any = None) -> Any:
            seen.append(usage)
            return finished(request_id, usage)

        adapter.finished = spy  # type: ignore[method-assign]
        client = openai.AsyncOpenAI(base_url=rig.base, api_key="x", max_retries=0)
        try:
            stream = await client.completions.create(
                model="sim-model", prompt="hello world", max_tokens=7, stream=True
            )
            assert [c.usage async for c in stream if c.usage is not None] == []
            await client.completions.create(model="sim-model", prompt="hi", max_tokens=3)
        finally:
            await client.close()
        assert [(u.completion_tokens if u else None) for u in seen] == [7, 3]  # type: ignore[attr-defined]
