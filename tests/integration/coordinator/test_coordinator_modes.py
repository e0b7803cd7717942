"""The coordinator's modes through the official ``openai`` client, on the memory broker."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable

import aiohttp
import openai
import pytest
from coordinator_rig import running_front

from brokers.flaky import FlakyBroker
from sluiceway.wire import ErrorCode, decode_result
from sluiceway.wire.headers import FAIRNESS_ID as FAIRNESS
from sluiceway.wire.headers import OBJECTIVE

MODEL = "sim-model"


def client(url: str, tenant: str, mode: str, **headers: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        base_url=f"{url}/v1",
        api_key="unused",
        max_retries=0,
        default_headers={"x-llm-d-tenant": tenant, "x-llm-d-async-mode": mode, **headers},
    )


async def test_passthrough_is_live_stamped_and_streams() -> None:
    async with running_front() as front:
        live = client(front.url, "realtime", "passthrough", **{OBJECTIVE: "sneaky"})
        async with live:
            done = await live.completions.create(model=MODEL, prompt="hi", max_tokens=4)
            stream = await live.chat.completions.create(
                model=MODEL,
                messages=[{"role": "user", "content": "hi"}],
                max_tokens=3,
                stream=True,
            )
            chunks = [c async for c in stream]
        assert done.usage is not None and done.usage.completion_tokens == 4
        assert sum(1 for c in chunks if c.choices and c.choices[0].delta.content) == 3
        assert front.seen == [{OBJECTIVE: "reserved-interactive", FAIRNESS: "realtime"}] * 2


async def test_passthrough_over_quota_runs_as_overflow() -> None:
    async with running_front() as front:
        async with client(front.url, "batch", "passthrough") as live:  # batch's limit is 1
            first = await live.completions.create(
                model=MODEL, prompt="a", max_tokens=40, stream=True
            )
            async for _ in first:  # the first token: it runs, holding batch's one slot
                break
            second = await live.completions.create(model=MODEL, prompt="b", max_tokens=2)
            assert second.choices
            await first.close()
        objectives = [s[OBJECTIVE] for s in front.seen]
        assert objectives == ["reserved-batch", "overflow-batch"]


async def test_wait_answers_with_the_model_response_through_the_queue() -> None:
    async with running_front() as front:
        async with client(front.url, "premium", "wait", **{OBJECTIVE: "sneaky"}) as waiting:
            reply = await waiting.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": "hi"}], max_tokens=5
            )
        assert reply.usage is not None and reply.usage.completion_tokens == 5
        # Queued traffic is stamped by the processor's lanes, not the client.
        assert front.seen == [{OBJECTIVE: "reserved-interactive", FAIRNESS: "premium"}]


async def call(
    url: str, method: str, path: str, *, headers: dict[str, str], body: bytes | None = None
) -> tuple[int, dict[str, str], bytes]:
    """One request; a body goes as JSON, as OpenAI clients send it, unless ``headers`` say."""
    if body is not None:
        headers = {"content-type": "application/json", **headers}
    async with (
        aiohttp.ClientSession(base_url=url) as http,
        http.request(method, path, data=body, headers=headers) as reply,
    ):
        return reply.status, {k.lower(): v for k, v in reply.headers.items()}, await reply.read()


async def until(check: Callable[[], Awaitable[bool]], *, within: float = 10.0) -> None:
    """Wait for a state the broker offers no event for, bounded in wall time."""
    loop = asyncio.get_running_loop()
    end = loop.time() + within
    while not await check():
        if loop.time() > end:
            raise AssertionError("state not reached in time")
        await asyncio.sleep(0.01)


async def test_enqueue_then_fetch_and_other_tenants_see_410() -> None:
    async with running_front() as front:
        headers = {"x-llm-d-tenant": "standard", "x-llm-d-async-mode": "enqueue"}
        body = json.dumps({"model": MODEL, "prompt": "hi", "max_tokens": 3}).encode()
        status, got_headers, raw = await call(
            front.url, "POST", "/v1/completions", headers=headers, body=body
        )
        assert status == 202
        request_id = json.loads(raw)["id"]
        assert json.loads(raw) == {"id": request_id, "status": "pending"}
        assert got_headers["x-request-id"] == request_id
        path = f"/v1/requests/{request_id}"
        other = await call(front.url, "GET", path, headers={"x-llm-d-tenant": "batch"})
        assert other[0] == 410
        mine = {"x-llm-d-tenant": "standard"}
        assert (await call(front.url, "GET", path, headers=mine))[0] in (200, 202)
        await until(lambda: front.broker.peek_result(f"results:req:standard:{request_id}"))
        status, _, raw = await call(front.url, "GET", path, headers=mine)
        assert status == 200
        assert json.loads(raw)["usage"]["completion_tokens"] == 3
        gone = await call(front.url, "GET", path, headers=mine)
        assert gone[0] == 410  # fetch grace 0: delivered once, then gone


async def test_unknown_api_key_is_401_and_a_known_key_names_the_tenant() -> None:
    async with running_front(api_keys={"k-premium": "premium"}) as front:
        bad = openai.AsyncOpenAI(base_url=f"{front.url}/v1", api_key="nope", max_retries=0)
        async with bad:
            with pytest.raises(openai.AuthenticationError) as err:
                await bad.completions.create(model=MODEL, prompt="x", max_tokens=1)
        assert err.value.status_code == 401
        good = openai.AsyncOpenAI(
            base_url=f"{front.url}/v1",
            api_key="k-premium",
            max_retries=0,
            default_headers={"x-llm-d-async-mode": "passthrough", "x-llm-d-tenant": "batch"},
        )
        async with good:
            await good.completions.create(model=MODEL, prompt="x", max_tokens=1)
        assert front.seen[-1][FAIRNESS] == "premium"


async def test_a_wait_client_that_leaves_while_queued_leaves_no_trace_at_the_model() -> None:
    async with running_front(start_processor=False) as front:
        body = json.dumps({"model": MODEL, "prompt": "hi", "max_tokens": 3}).encode()
        headers = {
            "x-llm-d-tenant": "batch",
            "x-llm-d-async-mode": "wait",
            "x-request-id": "leaver-1",
        }
        held = asyncio.create_task(
            call(front.url, "POST", "/v1/completions", headers=headers, body=body)
        )
        await until(lambda: _backlog(front))
        held.cancel()
        await asyncio.gather(held, return_exceptions=True)
        token = await _token(front)
        await until(lambda: front.broker.is_cancelled("batch:leaver-1", token))
        await front.processor.start()
        try:
            raw = await front.broker.pop_result("results:req:batch:leaver-1", 10.0)
        finally:
            await front.processor.stop()
        assert raw is not None and decode_result(raw).error_code == ErrorCode.CANCELLED
        assert await front.broker.result_count("results:req:batch:leaver-1") == 0
        assert front.seen == []


async def _backlog(front: object) -> bool:
    return await front.broker.backlog("team-batch") > 0  # type: ignore[attr-defined, no-any-return]


async def _token(front: object) -> str:
    (entry,) = await front.broker.peek("team-batch", 1)  # type: ignore[attr-defined]
    return str(json.loads(entry.member)["internal"]["request_token"])


async def test_a_retried_wait_with_the_same_id_queues_once() -> None:
    async with running_front(start_processor=False) as front:
        body = json.dumps({"model": MODEL, "prompt": "hi", "max_tokens": 2}).encode()
        headers = {
            "x-llm-d-tenant": "batch",
            "x-llm-d-async-mode": "enqueue",
            "x-request-id": "r-1",
        }
        for _ in range(3):
            reply = await call(front.url, "POST", "/v1/completions", headers=headers, body=body)
            assert reply[0] == 202
        assert await front.broker.backlog("team-batch") == 1


@pytest.mark.parametrize(
    ("headers", "body", "status", "code"),
    [
        ({"x-llm-d-async-mode": "later"}, b'{"model": "m"}', 400, "invalid_mode"),
        ({"x-llm-d-async-mode": "wait"}, b"{oops", 400, "invalid_json"),
        ({"x-llm-d-async-mode": "wait"}, b'{"model": "m", "stream": true}', 400, None),
        ({"x-llm-d-async-mode": "enqueue"}, b'{"prompt": "p"}', 400, "missing_model"),
        ({"x-llm-d-async-mode": "wait", "x-llm-d-tenant": "a:b"}, b'{"model": "m"}', 400, None),
        ({"x-llm-d-async-mode": "wait"}, b'{"model": "m", "p": "' + b"x" * 2048 + b'"}', 413, None),
    ],
)
async def test_bad_input_is_a_4xx_envelope_and_queues_nothing(
    headers: dict[str, str], body: bytes, status: int, code: str | None
) -> None:
    async with running_front(start_processor=False) as front:
        front.coordinator._max_body = 1024
        got, _, raw = await call(front.url, "POST", "/v1/completions", headers=headers, body=body)
        assert got == status
        error = json.loads(raw)["error"]
        assert error["message"] and (code is None or error["code"] == code)
        for team in ("premium", "standard", "batch"):
            assert await front.broker.backlog(f"team-{team}") == 0


async def test_models_lists_the_gateways_models_when_no_route_names_one() -> None:
    async with running_front() as front:
        async with client(front.url, "x", "passthrough") as listing:
            models = await listing.models.list()
        assert [m.id for m in models.data] == [MODEL]


async def test_a_bug_still_answers_in_the_openai_envelope() -> None:
    async with running_front(start_processor=False) as front:

        async def broken(destination: str) -> str | None:
            raise RuntimeError("a bug")

        front.broker.peek_result = broken  # type: ignore[method-assign]
        status, _, raw = await call(
            front.url, "GET", "/v1/requests/abc", headers={"x-llm-d-tenant": "batch"}
        )
    assert status == 500
    assert json.loads(raw)["error"]["code"] == "internal"


def _body(**fields: object) -> bytes:
    return json.dumps({"model": MODEL, **fields}).encode()


DEEP = b'{"model": "sim-model", "prompt": "p", "x": ' + b"[" * 5000 + b"]" * 5000 + b"}"


@pytest.mark.parametrize(
    ("path", "body", "content_type", "code"),
    [
        ("/v1/completions", _body(prompt="p").replace(b"}", b', "max_tokens": NaN}'), None,
         "invalid_json"),
        ("/v1/completions", _body(prompt="p").replace(b"}", b', "max_tokens": 1e309}'), None,
         "invalid_json"),
        ("/v1/completions", DEEP, None, "too_deep"),
        ("/v1/completions", _body(prompt=5), None, "invalid_request_body"),
        ("/v1/completions", _body(prompt="p", max_tokens=-5), None, "invalid_request_body"),
        ("/v1/completions", _body(prompt="p", max_tokens=2.5), None, "invalid_request_body"),
        ("/v1/completions", _body(prompt="p", max_tokens="abc"), None, "invalid_request_body"),
        ("/v1/chat/completions", _body(messages="hi"), None, "invalid_request_body"),
        ("/v1/completions", _body(prompt="p"), "text/plain", "invalid_content_type"),
    ],
    ids=["nan", "1e309", "5000-deep", "prompt-5", "max-tokens--5", "max-tokens-2.5",
         "max-tokens-abc", "messages-hi", "text-plain"],
)  # fmt: skip
@pytest.mark.parametrize("mode", ["wait", "enqueue"])
async def test_a_queued_body_a_model_server_would_refuse_is_400_and_queues_nothing(
    mode: str, path: str, body: bytes, content_type: str | None, code: str
) -> None:
    async with running_front(start_processor=False) as front:
        headers = {"x-llm-d-tenant": "batch", "x-llm-d-async-mode": mode}
        if content_type:
            headers["content-type"] = content_type
        status, _, raw = await call(front.url, "POST", path, headers=headers, body=body)
        assert (status, json.loads(raw)["error"]["code"]) == (400, code)
        assert await front.broker.backlog("team-batch") == 0


async def test_a_queued_request_for_a_model_the_gateway_does_not_list_is_404() -> None:
    async with running_front(start_processor=False) as front:
        headers = {"x-llm-d-tenant": "batch", "x-llm-d-async-mode": "enqueue"}
        body = json.dumps({"model": "gpt-unknown", "prompt": "p"}).encode()
        status, _, raw = await call(
            front.url, "POST", "/v1/completions", headers=headers, body=body
        )
        assert (status, json.loads(raw)["error"]["code"]) == (404, "model_not_found")
        served = await call(
            front.url, "POST", "/v1/completions", headers=headers, body=_body(prompt="p")
        )
        assert served[0] == 202
        assert await front.broker.backlog("team-batch") == 1


async def test_delete_of_another_tenants_id_answers_as_for_an_unknown_id_and_deletes_nothing() -> (
    None
):
    async with running_front(start_processor=False) as front:
        headers = {
            "x-llm-d-tenant": "standard",
            "x-llm-d-async-mode": "enqueue",
            "x-request-id": "d-1",
        }
        await call(front.url, "POST", "/v1/completions", headers=headers, body=_body(prompt="p"))
        other, mine = {"x-llm-d-tenant": "batch"}, {"x-llm-d-tenant": "standard"}
        deleted = await call(front.url, "DELETE", "/v1/requests/d-1", headers=other)
        unknown = await call(front.url, "GET", "/v1/requests/d-1", headers=other)
        assert deleted[0] == unknown[0] == 410
        assert json.loads(deleted[2])["error"]["code"] == "UNKNOWN_REQUEST"
        assert (await call(front.url, "GET", "/v1/requests/d-1", headers=mine))[0] == 202
        assert (await call(front.url, "DELETE", "/v1/requests/d-1", headers=mine))[0] == 204
        assert (await call(front.url, "DELETE", "/v1/requests/never", headers=mine))[0] == 410


@pytest.mark.parametrize(
    ("method", "path", "headers", "allow"),
    [
        ("GET", "/v1/completions", {"x-llm-d-async-mode": "wait"}, "POST"),
        ("PUT", "/v1/chat/completions", {"x-llm-d-async-mode": "passthrough"}, "POST"),
        ("POST", "/v1/requests/abc", {"x-llm-d-async-mode": "enqueue"}, "GET, DELETE"),
        ("POST", "/metrics", {}, "GET, HEAD"),
        ("DELETE", "/healthz", {}, "GET, HEAD"),
        ("PATCH", "/readyz", {}, "GET, HEAD"),
        ("POST", "/v1/models", {}, "GET"),
    ],
)
async def test_a_method_a_path_does_not_take_is_405_with_allow(
    method: str, path: str, headers: dict[str, str], allow: str
) -> None:
    async with running_front(start_processor=False) as front:
        status, got, raw = await call(front.url, method, path, headers=headers, body=b"{}")
        assert (status, got["allow"]) == (405, allow)
        assert json.loads(raw)["error"]["code"] == "method_not_allowed"
        for probe in ("/metrics", "/healthz", "/readyz"):
            assert (await call(front.url, "HEAD", probe, headers={}))[0] == 200


async def test_a_held_wait_rides_out_a_broker_blip() -> None:
    broker = FlakyBroker()
    async with running_front(broker=broker) as front:
        broker.fail("peek_result", 2)
        broker.fail("expire_result", 2)
        headers = {"x-llm-d-tenant": "batch", "x-llm-d-async-mode": "wait"}
        body = _body(prompt="p", max_tokens=2)
        status, _, raw = await call(
            front.url, "POST", "/v1/completions", headers=headers, body=body
        )
        assert status == 200 and json.loads(raw)["usage"]["completion_tokens"] == 2
        assert broker.failed == {"peek_result": 2, "expire_result": 2}


async def test_a_result_whose_expiry_cannot_be_set_is_still_delivered() -> None:
    broker = FlakyBroker()
    async with running_front(broker=broker) as front:
        broker.fail("expire_result", 1000)  # "redis expire_result failed" on every try
        headers = {"x-llm-d-tenant": "batch", "x-llm-d-async-mode": "wait"}
        body = _body(prompt="p", max_tokens=2)
        status, _, raw = await call(
            front.url, "POST", "/v1/completions", headers=headers, body=body
        )
        assert status == 200 and json.loads(raw)["usage"]["completion_tokens"] == 2


async def test_a_broker_down_past_the_retries_is_503_with_retry_after_and_loses_nothing() -> None:
    broker = FlakyBroker()
    async with running_front(broker=broker, start_processor=False) as front:
        headers = {"x-llm-d-tenant": "batch", "x-llm-d-async-mode": "wait"}
        body = _body(prompt="p", max_tokens=2)
        held = asyncio.create_task(
            call(front.url, "POST", "/v1/completions", headers=headers, body=body)
        )
        await until(lambda: _backlog(front))  # queued and held: now the broker goes away
        broker.fail("peek_result", 1000)
        await front.processor.start()
        try:
            status, got, raw = await asyncio.wait_for(held, 20)
            assert (status, got["retry-after"]) == (503, "1")
            assert json.loads(raw)["error"]["code"] == "LOOKUP_FAILED"
            broker.fail("peek_result", 0)  # back: the answer is fetched by the id it was given
            fetched = f"/v1/requests/{got['x-request-id']}"
            status, _, raw = await call(
                front.url, "GET", fetched, headers={"x-llm-d-tenant": "batch"}
            )
        finally:
            await front.processor.stop()
        assert status == 200 and json.loads(raw)["usage"]["completion_tokens"] == 2
