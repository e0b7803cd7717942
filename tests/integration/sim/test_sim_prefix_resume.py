"""Prefix resume against the simulator over loopback HTTP: a streamed generation is cut
mid-way, as an eviction cuts it, then continued with a prompt that carries the text received
(built by ``processor/resume.py`` for completions; messages plus an assistant message for
chat). The continuation finds the original prompt's and output's KV blocks in the prefix
cache: its recomputed prompt is only the tail that does not fill a block."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from sluiceway.clock import RealClock
from sluiceway.observability import names
from sluiceway.processor.resume import ResumeState, parse_event
from sluiceway.sim import SimConfig, SimPool, running_simulator

SIM = SimConfig.from_profile("h100-8b")  # per-token prefill: recomputed tokens cost TTFT
BLOCK = SIM.block_size
PROMPT = " ".join(f"word{i}" for i in range(100))  # 100 tokens
CUT = 40  # token events read before the connection is closed


@pytest.fixture
async def sim() -> AsyncIterator[SimPool]:
    async with running_simulator(SIM, clock=RealClock(scale=10)) as pool:
        yield pool


async def _hits(http: aiohttp.ClientSession, url: str) -> float:
    """``vllm:prefix_cache_hits_total`` as the simulator exports it."""
    async with http.get(url + "/metrics") as resp:
        text = await resp.text()
    return sum(
        s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == names.VLLM_PREFIX_CACHE_HITS_TOTAL
    )


def _token_text(line: bytes) -> str | None:
    """The generated text an SSE line carries (completion or chat chunk), None for others."""
    if not line.startswith(b"data: {"):
        return None
    choice = (orjson.loads(line[6:]).get("choices") or [{}])[0]
    return choice.get("text") or (choice.get("delta") or {}).get("content")


def _usage(lines: list[bytes]) -> dict[str, Any]:
    """The trailing usage chunk of a stream."""
    [usage] = [u for e in map(parse_event, lines) if e is not None and (u := e.usage)]
    return usage


async def _attempt(
    http: aiohttp.ClientSession, url: str, body: bytes | dict[str, Any], cut: int | None = None
) -> list[bytes]:
    """POST a streamed request and return its SSE lines. With ``cut``, hang up after that many
    token events: the simulator aborts the request, as it does when an eviction cuts it."""
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    lines: list[bytes] = []
    async with http.post(url, data=data, headers={"content-type": "application/json"}) as resp:
        assert resp.status == 200
        async for line in resp.content:
            lines.append(line)
            if cut is not None and sum(_token_text(x) is not None for x in lines) >= cut:
                resp.close()
                break
    return lines


async def _until_idle(sim: SimPool) -> None:
    """Wait for the cut request's abort to reach the engine (no event tells the client)."""
    for _ in range(500):
        if sim.engines[0].num_running == 0:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the cut request kept running")


async def test_a_resumed_completion_hits_the_cached_prompt_and_output(sim: SimPool) -> None:
    url = sim.urls[0] + "/v1/completions"
    state = ResumeState({"model": "sim-model", "prompt": PROMPT, "max_tokens": 100})
    hits: list[float] = []  # after each attempt
    async with aiohttp.ClientSession() as http:
        for cut in (CUT, None):  # the first attempt is cut; the second resumes it
            state.begin()
            lines = await _attempt(http, url, state.body(), cut)
            for event in filter(None, map(parse_event, lines)):
                if not event.done:
                    state.add(event)
            state.end_attempt(evicted=cut is not None)
            await _until_idle(sim)
            hits.append(await _hits(http, sim.urls[0]))
    resumed = _usage(lines)
    prompt_tokens = resumed["prompt_tokens"]
    assert prompt_tokens == 100 + CUT and state.generated == 100
    cached = resumed["prompt_tokens_details"]["cached_tokens"]
    assert cached == hits[1] - hits[0] == (prompt_tokens - 1) // BLOCK * BLOCK  # every full block
    # Without the generated tokens' blocks only the prompt's 6 full blocks (96 tokens) would hit.
    assert prompt_tokens - cached < BLOCK < prompt_tokens - 100 // BLOCK * BLOCK


async def test_a_chat_continued_with_its_partial_answer_hits_the_cache(sim: SimPool) -> None:
    url = sim.urls[0] + "/v1/chat/completions"
    messages = [{"role": "user", "content": PROMPT}]
    body = {"model": "sim-model", "messages": messages, "max_tokens": 100, "stream": True}
    body["stream_options"] = {"include_usage": True}
    async with aiohttp.ClientSession() as http:
        lines = await _attempt(http, url, body, CUT)
        await _until_idle(sim)
        partial = {"role": "assistant", "content": "".join(filter(None, map(_token_text, lines)))}
        resumed = _usage(await _attempt(http, url, {**body, "messages": [*messages, partial]}))
    cached = resumed["prompt_tokens_details"]["cached_tokens"]
    original = resumed["prompt_tokens"] - CUT - 5  # the new "<|assistant|>" marker: 5 tokens
    assert cached == (original + CUT) // BLOCK * BLOCK > original
