"""The simulator over real loopback HTTP, sped up with a time scale."""

from __future__ import annotations

import asyncio
import logging
import statistics
import time
from collections.abc import AsyncIterator, Callable

import aiohttp
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from sluiceway.clock import RealClock
from sluiceway.errors import ConfigError
from sluiceway.observability import names
from sluiceway.sim import SimConfig, SimPool, running_simulator

FAST = SimConfig(max_num_seqs=4, time_to_first_token=0.05, inter_token_latency=0.01)


@pytest.fixture
async def sim() -> AsyncIterator[SimPool]:
    cfg = FAST.replace({"label_headers": ("x-team",), "max_waiting_queue_length": 2})
    async with running_simulator(cfg, instances=2, clock=RealClock(scale=10)) as pool:
        yield pool


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


@pytest.fixture
async def client(sim: SimPool) -> AsyncIterator[openai.AsyncOpenAI]:
    async with _client(sim.urls[0]) as oai:
        yield oai


def _client(url: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)


async def _eventually(predicate: Callable[[], bool]) -> None:
    """Wait (up to 5 s) for server-side state the client cannot observe through an event."""
    for _ in range(2500):
        if predicate():
            return
        await asyncio.sleep(0.002)
    raise AssertionError("condition not reached")


async def test_completion_and_chat_with_usage(client: openai.AsyncOpenAI) -> None:
    done = await client.completions.create(model="sim-model", prompt="a b c", max_tokens=5)
    assert done.choices[0].finish_reason == "length"
    assert done.usage is not None and done.usage.completion_tokens == 5
    assert done.usage.prompt_tokens == 3
    chat = await client.chat.completions.create(
        model="sim-model", messages=[{"role": "user", "content": "hi"}], max_tokens=3
    )
    assert chat.choices[0].message.content and chat.usage and chat.usage.completion_tokens == 3
    # The same prompt again: its full blocks come from the prefix cache.
    long_prompt = " ".join(f"w{i}" for i in range(40))
    for _ in range(2):
        again = await client.completions.create(model="sim-model", prompt=long_prompt, max_tokens=1)
    details = again.usage.prompt_tokens_details if again.usage else None
    assert details is not None and details.cached_tokens == 32


async def test_streaming_sends_one_event_per_token_then_usage_and_done(
    sim: SimPool, http: aiohttp.ClientSession
) -> None:
    body = {
        "model": "sim-model",
        "messages": [{"role": "user", "content": "hello"}],
        "max_tokens": 6,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    async with http.post(sim.urls[1] + "/v1/chat/completions", json=body) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("text/event-stream")
        raw = (await resp.read()).decode()
    events = [e.removeprefix("data: ") for e in raw.strip().split("\n\n")]
    assert events[-1] == "[DONE]"
    assert len(events) == 6 + 2  # tokens, usage chunk, [DONE]
    assert '"finish_reason":"length"' in events[5] and '"usage"' in events[6]


@pytest.mark.serial
async def test_streaming_ttft_is_well_below_e2e() -> None:
    cfg = SimConfig.from_profile("guide-pool")
    # Scale 2 keeps E2E (~0.5 s wall) large against client-side connection overheads.
    async with running_simulator(cfg, clock=RealClock(scale=2)) as pool:
        client = _client(pool.urls[0])

        async def one(i: int) -> tuple[float, float]:
            start = time.perf_counter()
            ttft = 0.0
            stream = await client.completions.create(
                model="sim-model", prompt=f"p {i}", max_tokens=64, stream=True
            )
            async for _ in stream:
                ttft = ttft or time.perf_counter() - start
            return ttft, time.perf_counter() - start

        results = await asyncio.gather(*(one(i) for i in range(10)))
        await client.close()
    ttft_p50 = statistics.median(r[0] for r in results)
    e2e_p50 = statistics.median(r[1] for r in results)
    assert ttft_p50 / e2e_p50 < 0.6


async def test_metrics_use_the_vllm_names_in_text_format(
    sim: SimPool, http: aiohttp.ClientSession, client: openai.AsyncOpenAI
) -> None:
    await client.completions.create(
        model="sim-model", prompt="x", max_tokens=2, extra_headers={"x-team": "blue"}
    )
    async with http.get(sim.urls[0] + "/metrics") as resp:
        assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = await resp.text()
    families = {f.name for f in text_string_to_metric_families(text)}
    for name in names.VLLM_METRICS:
        assert name.removesuffix("_total") in families, name
    assert f'{names.SIM_RUNNING_BY_LABEL}{{header="x-team",value="blue"}} 0' in text
    assert 'vllm:generation_tokens_total{model_name="sim-model",engine="0"} 2' in text


@pytest.mark.parametrize(
    ("body", "status", "param"),
    [
        (b"{not json", 400, None),
        (b'{"prompt": "x"}', 400, "model"),
        (b'{"model": "other", "prompt": "x"}', 404, "model"),
        (b'{"model": "sim-model", "prompt": "x", "max_tokens": 0}', 400, "max_tokens"),
        (b'{"model": "sim-model", "prompt": "x", "max_tokens": 5000}', 400, "max_tokens"),
        (b'{"model": "sim-model", "prompt": "' + b"w " * 1100 + b'"}', 400, "prompt"),
        (b'{"model": "sim-model", "messages": []}', 400, "prompt"),
    ],
)
async def test_bad_input_gets_openai_style_errors(
    sim: SimPool, http: aiohttp.ClientSession, body: bytes, status: int, param: str | None
) -> None:
    async with http.post(sim.urls[0] + "/v1/completions", data=body) as resp:
        assert resp.status == status
        error = (await resp.json())["error"]
    assert error["code"] == status and error["message"] and error["param"] == param


async def test_full_waiting_queue_answers_429(sim: SimPool, client: openai.AsyncOpenAI) -> None:
    long = [
        asyncio.create_task(
            client.completions.create(model="sim-model", prompt=f"{i}", max_tokens=1000)
        )
        for i in range(6)  # 4 running + 2 waiting
    ]
    await _eventually(lambda: sim.engines[0].num_waiting == 2)
    with pytest.raises(openai.RateLimitError):
        await client.completions.create(model="sim-model", prompt="late", max_tokens=1)
    for task in long:
        task.cancel()
    await asyncio.gather(*long, return_exceptions=True)
    # Clients that gave up while running or waiting are aborted, not left in the engine.
    await _eventually(lambda: sim.engines[0].num_running + sim.engines[0].num_waiting == 0)


async def test_return_error_header_fails_the_first_n_attempts(
    sim: SimPool, http: aiohttp.ClientSession
) -> None:
    url = sim.urls[0] + "/v1/completions"
    body = {"model": "sim-model", "prompt": "retry me", "max_tokens": 1}
    headers = {"X-Return-Error": "503;retry-after=2.5;times=2", "x-request-id": "job-1"}
    statuses = []
    for _ in range(3):
        async with http.post(url, json=body, headers=headers) as resp:
            statuses.append((resp.status, resp.headers.get("Retry-After")))
    assert statuses == [(503, "2.5"), (503, "2.5"), (200, None)]
    # Attempts are counted across the pool: a retry on another instance is the next attempt.
    headers = {"X-Return-Error": "429;times=1", "x-request-id": "job-2"}
    async with http.post(url, json=body, headers=headers) as resp:
        assert resp.status == 429
    async with http.post(sim.urls[1] + "/v1/completions", json=body, headers=headers) as resp:
        assert resp.status == 200
    # Without x-request-id the body identifies the request; without times it always fails.
    for _ in range(2):
        async with http.post(url, json=body, headers={"X-Return-Error": "429"}) as resp:
            assert resp.status == 429 and "Retry-After" not in resp.headers


async def test_admin_config_changes_latency_at_run_time(
    sim: SimPool, http: aiohttp.ClientSession
) -> None:
    url = sim.urls[0] + "/admin/config"
    # Durations in the CLI's units: a bare number is milliseconds, a string may carry a unit.
    changes = {"inter-token-latency": 500, "time_to_first_token": "0.5s", "max_num_seqs": 7}
    async with http.post(url, json=changes) as resp:
        assert resp.status == 200
    async with http.get(url) as resp:
        current = await resp.json()
    assert current["inter_token_latency"] == 500.0 and current["time_to_first_token"] == 500.0
    assert current["max_num_seqs"] == 7
    assert sim.engines[0].config.inter_token_latency == pytest.approx(0.5)
    assert sim.engines[0].config.max_num_seqs == 7 and sim.engines[1].config.max_num_seqs == 4
    async with http.post(url, json={"block_size": 32}) as resp:
        assert resp.status == 400
        assert (await resp.json())["error"]["param"] == "block_size"
    async with http.post(url, json={"max_num_seqs": 0}) as resp:
        assert resp.status == 400
    async with http.post(url, json={"inter-token-latency": "soon"}) as resp:
        assert resp.status == 400
        error = (await resp.json())["error"]
    assert error["param"] == "inter-token-latency" and "duration" in error["message"]
    sim.set_config(max_num_seqs=2)  # the library form, on every instance
    assert [e.config.max_num_seqs for e in sim.engines] == [2, 2]
    with pytest.raises(ConfigError):
        sim.set_config(num_gpu_blocks=10)


async def test_client_disconnect_aborts_and_the_waiter_starts(
    sim: SimPool, http: aiohttp.ClientSession, client: openai.AsyncOpenAI
) -> None:
    engine = sim.engines[0]
    engine.update_config(engine.config.replace({"max_num_seqs": 1}))
    body = {"model": "sim-model", "prompt": "long", "max_tokens": 500, "stream": True}
    resp = await http.post(sim.urls[0] + "/v1/completions", json=body)
    await resp.content.readuntil(b"\n\n")  # first token arrived: it is running
    waiter = asyncio.create_task(
        client.completions.create(model="sim-model", prompt="next", max_tokens=2)
    )
    await _eventually(lambda: engine.num_waiting == 1)
    resp.close()  # the client goes away mid-stream
    result = await asyncio.wait_for(waiter, timeout=5)
    assert result.choices[0].finish_reason == "length"
    assert engine.stats.finished["abort"] == 1


async def test_models_and_health(sim: SimPool, http: aiohttp.ClientSession) -> None:
    async with http.get(sim.urls[0] + "/v1/models") as resp:
        assert (await resp.json())["data"][0]["id"] == "sim-model"
    for path in ("/health", "/healthz", "/readyz"):
        async with http.get(sim.urls[1] + path) as resp:
            assert resp.status == 200


async def test_non_streaming_client_timeout_aborts_the_request(sim: SimPool) -> None:
    engine = sim.engines[0]
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=0.1)) as impatient:
        body = {"model": "sim-model", "prompt": "slow", "max_tokens": 10_000 // 10}
        with pytest.raises(asyncio.TimeoutError):
            await impatient.post(sim.urls[0] + "/v1/completions", json=body)
    await _eventually(lambda: engine.stats.finished["abort"] == 1)
    assert engine.num_running == 0


async def test_priority_field_orders_the_waiting_queue() -> None:
    cfg = FAST.replace({"max_num_seqs": 1, "scheduling_policy": "priority"})
    async with (
        running_simulator(cfg, clock=RealClock(scale=10)) as pool,
        _client(pool.urls[0]) as oai,
    ):
        order: list[int] = []

        async def run(priority: int, tokens: int) -> None:
            await oai.completions.create(
                model="sim-model", prompt="p", max_tokens=tokens, extra_body={"priority": priority}
            )
            order.append(priority)

        first = asyncio.create_task(run(0, 300))
        await _eventually(lambda: pool.engines[0].num_running == 1)
        rest = [asyncio.create_task(run(p, 1)) for p in (7, 3, -1)]
        await _eventually(lambda: pool.engines[0].num_waiting == 3)
        await asyncio.gather(first, *rest)
    assert order == [0, -1, 3, 7]


async def test_kv_pressure_preempts_and_every_stream_still_completes(
    http: aiohttp.ClientSession,
) -> None:
    cfg = FAST.replace({"max_num_seqs": 4, "block_size": 4, "num_gpu_blocks": 12})
    async with (
        running_simulator(cfg, clock=RealClock(scale=10)) as pool,
        _client(pool.urls[0]) as oai,
    ):
        results = await asyncio.gather(
            *(
                oai.completions.create(model="sim-model", prompt=f"q{i}", max_tokens=16)
                for i in range(4)
            )
        )
        async with http.get(pool.urls[0] + "/metrics") as resp:
            text = await resp.text()
    assert all(r.usage and r.usage.completion_tokens == 16 for r in results)
    preemptions = next(
        s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == names.VLLM_NUM_PREEMPTIONS_TOTAL
    )
    assert preemptions >= 1


async def test_leaving_the_context_with_requests_in_flight_does_not_hang(
    http: aiohttp.ClientSession,
) -> None:
    cfg = FAST.replace({"inter_token_latency": 1.0})
    body = {"model": "sim-model", "prompt": "x", "max_tokens": 100}
    async with asyncio.timeout(10):
        async with running_simulator(cfg) as pool:
            url = pool.urls[0] + "/v1/completions"
            streaming = await http.post(url, json={**body, "stream": True})
            plain = asyncio.create_task(http.post(url, json=body))
            await _eventually(lambda: pool.engines[0].num_running == 2)
        answer = await plain
    assert answer.status == 503
    assert (await answer.json())["error"]["code"] == 503
    assert b"[DONE]" not in await streaming.read()
    assert pool.engines[0].stats.finished["abort"] == 2


# -- what vLLM users notice: errors, models, stop, echo, logprobs, delivered latencies ---------


async def test_unknown_routes_and_wrong_methods_answer_the_openai_envelope(
    sim: SimPool, http: aiohttp.ClientSession
) -> None:
    async with http.get(sim.urls[0] + "/v1/nowhere") as resp:
        assert resp.status == 404
        error = (await resp.json())["error"]
    assert error["code"] == 404 and error["type"] == "NotFoundError"
    async with http.get(sim.urls[0] + "/v1/completions") as resp:
        assert resp.status == 405 and "POST" in resp.headers["Allow"]
        assert (await resp.json())["error"]["code"] == 405


async def test_models_by_id_as_vllm(sim: SimPool, client: openai.AsyncOpenAI) -> None:
    model = await client.models.retrieve("sim-model")
    assert model.id == "sim-model" and model.object == "model"
    with pytest.raises(openai.NotFoundError):
        await client.models.retrieve("org/other-model")


async def test_stop_sequences_end_the_text_with_reason_stop(client: openai.AsyncOpenAI) -> None:
    full = await client.completions.create(model="sim-model", prompt="tell", max_tokens=12)
    words = full.choices[0].text.split()
    stop = words[5]
    first = words.index(stop)
    done = await client.completions.create(
        model="sim-model", prompt="tell", max_tokens=12, stop=[stop]
    )
    assert done.choices[0].finish_reason == "stop"
    assert done.choices[0].text.split() == words[:first]
    assert done.usage is not None and done.usage.completion_tokens == first + 1
    chunks = await client.completions.create(
        model="sim-model", prompt="tell", max_tokens=12, stop=stop, stream=True
    )
    pieces = [c async for c in chunks]
    assert "".join(c.choices[0].text for c in pieces).split() == words[:first]
    assert pieces[-1].choices[0].finish_reason == "stop"


async def test_echo_puts_the_prompt_before_the_completion(client: openai.AsyncOpenAI) -> None:
    done = await client.completions.create(
        model="sim-model", prompt="Say:", max_tokens=2, echo=True
    )
    assert done.choices[0].text.startswith("Say: ")


async def test_logprobs_have_the_openai_shape(client: openai.AsyncOpenAI) -> None:
    done = await client.completions.create(model="sim-model", prompt="x", max_tokens=3, logprobs=2)
    logprobs = done.choices[0].logprobs
    assert logprobs is not None and logprobs.tokens is not None and len(logprobs.tokens) == 3
    assert logprobs.top_logprobs is not None and len(logprobs.top_logprobs[0]) == 3
    chat = await client.chat.completions.create(
        model="sim-model",
        messages=[{"role": "user", "content": "hi"}],
        max_tokens=2,
        logprobs=True,
        top_logprobs=4,
    )
    content = chat.choices[0].logprobs.content if chat.choices[0].logprobs else None
    assert content is not None and len(content) == 2 and len(content[0].top_logprobs) == 4
    with pytest.raises(openai.BadRequestError):
        await client.chat.completions.create(
            model="sim-model", messages=[{"role": "user", "content": "hi"}], top_logprobs=2
        )


async def test_what_vllm_rejects_is_rejected(client: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.BadRequestError):
        await client.completions.create(model="sim-model", prompt="", max_tokens=2)
    with pytest.raises(openai.BadRequestError):
        await client.chat.completions.create(
            model="sim-model",
            messages=[{"content": "no role"}],  # type: ignore[list-item, typeddict-item]
            max_tokens=2,
        )


async def test_latency_is_recorded_as_delivered_and_the_loop_lag_is_exported(
    http: aiohttp.ClientSession,
) -> None:
    """A stalled event loop delays the tokens; /metrics shows what the client saw."""
    cfg = SimConfig(time_to_first_token=0.02, inter_token_latency=0.01)
    async with running_simulator(cfg, clock=RealClock()) as pool:
        body = {"model": "sim-model", "prompt": "x", "max_tokens": 3, "stream": True}
        resp = await http.post(pool.urls[0] + "/v1/completions", json=body)
        time.sleep(0.3)  # noqa: ASYNC251 - stalls the loop the server shares; token due in 20 ms
        await resp.read()
        async with http.get(pool.urls[0] + "/metrics") as metrics:
            text = await metrics.text()
    samples = {
        (s.name, s.labels.get("le")): s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
    }
    assert samples[(names.VLLM_TTFT_SECONDS + "_sum", None)] >= 0.25
    assert samples[(names.VLLM_TTFT_SECONDS + "_count", None)] == 1
    assert samples[(names.VLLM_E2E_SECONDS + "_count", None)] == 1
    assert samples[(names.SIM_EVENT_LOOP_LAG, None)] >= 0.15
    assert samples[(names.SIM_TOKEN_LATENESS + "_sum", None)] >= 0.25


async def test_a_request_aiohttp_cannot_parse_is_a_400_without_an_error_log(
    sim: SimPool, caplog: pytest.LogCaptureFixture
) -> None:
    """Too many headers is the client's fault: a 400 and a DEBUG line, not an ERROR traceback
    per request (the fuzz tests found aiohttp logging one)."""
    caplog.set_level(logging.DEBUG, logger="aiohttp.server")
    headers = [(f"x-pad-{i}", "p") for i in range(200)]
    body = {"model": "sim-model", "prompt": "x", "max_tokens": 1}
    async with aiohttp.ClientSession() as http:
        async with http.post(sim.urls[0] + "/v1/completions", json=body, headers=headers) as resp:
            assert resp.status == 400
        async with http.get(sim.urls[0] + "/healthz") as resp:
            assert resp.status == 200
    logged = [r for r in caplog.records if r.name == "aiohttp.server"]
    assert logged and all(r.levelno == logging.DEBUG for r in logged)


async def test_embeddings_with_the_openai_client_in_every_encoding(
    client: openai.AsyncOpenAI,
) -> None:
    texts = ["the river bank", "the river gate", "quota metric signal"]
    floats = await client.embeddings.create(model="sim-model", input=texts, encoding_format="float")
    vectors = [d.embedding for d in floats.data]
    assert [d.index for d in floats.data] == [0, 1, 2] and len(vectors[0]) == 64
    assert floats.usage.prompt_tokens == floats.usage.total_tokens == 9
    # the client's default asks for base64 and decodes it: the same vectors, as float32
    default = await client.embeddings.create(model="sim-model", input=texts)
    for got, want in zip((d.embedding for d in default.data), vectors, strict=True):
        assert all(abs(a - b) < 1e-6 for a, b in zip(got, want, strict=True))
    packed = await client.embeddings.create(
        model="sim-model", input="the river bank", encoding_format="base64", dimensions=8
    )
    assert isinstance(packed.data[0].embedding, str)  # left encoded when asked for
    near = sum(a * b for a, b in zip(vectors[0], vectors[1], strict=True))
    far = sum(a * b for a, b in zip(vectors[0], vectors[2], strict=True))
    assert near > far
    with pytest.raises(openai.NotFoundError):
        await client.embeddings.create(model="other", input="x")


async def test_tokenize_and_detokenize(sim: SimPool, http: aiohttp.ClientSession) -> None:
    body = {"model": "sim-model", "prompt": " river gate", "return_token_strs": True}
    async with http.post(sim.urls[0] + "/tokenize", json=body) as resp:
        assert resp.status == 200
        tokens = await resp.json()
    assert tokens["count"] == 2 and tokens["token_strs"] == ["river", "gate"]
    async with http.post(sim.urls[0] + "/detokenize", json={"tokens": tokens["tokens"]}) as resp:
        assert (resp.status, await resp.json()) == (200, {"prompt": " river gate"})
    async with http.get(sim.urls[0] + "/tokenize") as resp:
        assert resp.status == 405 and resp.headers["Allow"] == "POST"
