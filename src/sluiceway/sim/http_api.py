"""The HTTP API of one simulated model server (aiohttp.web): OpenAI endpoints (generation,
embeddings, vLLM's tokenizer routes), metrics, admin.

aiohttp.web is used because, measured on this kind of machine, it emits SSE from the server
itself faster than the alternatives; the app runner is started with handler cancellation on, so
a client that goes away cancels its handler and the request is aborted in the engine at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
import time
import uuid
from collections.abc import Mapping
from typing import Any

import orjson
from aiohttp import web

from sluiceway.clock import Clock
from sluiceway.errors import ConfigError
from sluiceway.sim.admin_config import apply_admin_changes, config_view
from sluiceway.sim.config import RUNTIME_FIELDS, SimConfig
from sluiceway.sim.embeddings import embedding_body, parse_embedding_request
from sluiceway.sim.engine import Engine
from sluiceway.sim.engine_driver import EngineDriver, TokenStream
from sluiceway.sim.failures import (
    AttemptLedger,
    Failure,
    attempt_key,
    header_failure,
    parse_return_error,
    pick_injected_failure,
)
from sluiceway.sim.loop_lag import LoopLagProbe
from sluiceway.sim.metrics import CONTENT_TYPE, render_metrics
from sluiceway.sim.openai_request import ApiError, Kind, Parsed, parse_request
from sluiceway.sim.openai_response import DONE_EVENT, AnswerFormat, ChunkFormat, api_error_body
from sluiceway.sim.sequence import Admission, SimRequest
from sluiceway.sim.sse import SseWriter
from sluiceway.sim.stop_strings import StopCut, find_stop
from sluiceway.sim.tokenizer import output_salt
from sluiceway.sim.tokenizer_api import detokenize_body, tokenize_body

__all__ = ["SimInstance"]

_SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}


class SimInstance:
    """One model server: engine, step loop and the aiohttp application serving it."""

    def __init__(
        self,
        config: SimConfig,
        clock: Clock,
        *,
        index: int = 0,
        ledger: AttemptLedger | None = None,
        lag: LoopLagProbe | None = None,
    ) -> None:
        self.engine = Engine(config)
        self.driver = EngineDriver(self.engine, clock)
        self.clock = clock
        # Shared by the instances of one pool: a retry that lands on another instance is
        # still the same request's next attempt.
        self._ledger = ledger or AttemptLedger()
        self._rng = random.Random(config.seed * 1_000_003 + index)
        self._ids = itertools.count()
        self._lag = lag
        self.app = web.Application(
            client_max_size=64 * 1024 * 1024, middlewares=[_openai_error_envelope]
        )
        self.app.router.add_post("/v1/completions", self._completions)
        self.app.router.add_post("/v1/chat/completions", self._chat)
        self.app.router.add_post("/v1/embeddings", self._embeddings)
        self.app.router.add_post("/tokenize", self._tokenize)
        self.app.router.add_post("/detokenize", self._detokenize)
        self.app.router.add_get("/v1/models", self._models)
        self.app.router.add_get("/v1/models/{model_id:.+}", self._model)
        self.app.router.add_get("/health", self._health)
        self.app.router.add_get("/healthz", self._health)
        self.app.router.add_get("/readyz", self._health)
        self.app.router.add_get("/metrics", self._metrics)
        self.app.router.add_get("/admin/config", self._get_config)
        self.app.router.add_post("/admin/config", self._post_config)

    @property
    def config(self) -> SimConfig:
        return self.engine.config

    # -- generation ---------------------------------------------------------------------------

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        return await self._generate(request, "completion")

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        return await self._generate(request, "chat")

    async def _generate(self, request: web.Request, kind: Kind) -> web.StreamResponse:
        body = await request.read()
        failed = self._failed(request, body)
        if failed is not None:
            return failed
        parsed = parse_request(body, kind, self.config)
        if isinstance(parsed, ApiError):
            return _error(parsed)
        cut = self._stop_cut(parsed)
        sim_request = self._sim_request(request, parsed, cut)
        outcome, stream = self.driver.submit(sim_request)
        if stream is None:
            return _error(_refusal(outcome))
        try:
            return await self._respond(request, parsed, stream, cut)
        finally:
            stream.listener = None  # the writer refers to the stream: free both without a GC
            if stream.seq.finished:
                self.driver.release(sim_request.request_id)
            else:
                self.driver.abort(sim_request.request_id)

    def _failed(self, request: web.Request, body: bytes) -> web.Response | None:
        """The answer of an injected failure (or of a bad ``X-Return-Error``), if one is due."""
        failure = self._failure(request, body)
        if isinstance(failure, ApiError):
            return _error(failure)
        return None if failure is None else _failure_response(failure)

    def _failure(self, request: web.Request, body: bytes) -> Failure | ApiError | None:
        header = request.headers.get("X-Return-Error")
        if header is not None:
            try:
                spec = parse_return_error(header)
            except ValueError as exc:
                return ApiError(400, f"bad X-Return-Error header: {exc}", param="X-Return-Error")
            key = attempt_key(request.headers.get("x-request-id"), body)
            if self._ledger.fails(key, spec):
                return header_failure(spec)
            return None
        return pick_injected_failure(self.config, self._rng)

    def _sim_request(self, request: web.Request, parsed: Parsed, cut: StopCut | None) -> SimRequest:
        return SimRequest(
            request_id=str(next(self._ids)),
            prompt=parsed.prompt,
            max_tokens=parsed.max_tokens,
            priority=parsed.priority,
            ignore_eos=parsed.ignore_eos,
            labels=self._labels(request),
            stop_after=None if cut is None else cut.tokens,
            max_tokens_param=parsed.max_tokens_param,
        )

    def _stop_cut(self, parsed: Parsed) -> StopCut | None:
        if not parsed.stop:
            return None
        salt = output_salt(self.config.seed, parsed.prompt)
        return find_stop(salt, parsed.max_tokens, parsed.stop)

    def _labels(self, request: web.Request) -> tuple[tuple[str, str], ...]:
        found = ((h, request.headers.get(h)) for h in self.config.label_headers)
        return tuple((h, v) for h, v in found if v is not None)

    async def _respond(
        self, request: web.Request, parsed: Parsed, stream: TokenStream, cut: StopCut | None
    ) -> web.StreamResponse:
        fmt = ChunkFormat(
            parsed.kind, _response_id(parsed.kind), int(self.clock.now()), self.config.model
        )
        answer = AnswerFormat(fmt, echo_text=parsed.echo_text, stop=cut, logprobs=parsed.logprobs)
        headers = _echo_id(request)
        if parsed.stream:
            return await self._stream(request, parsed, stream, answer, headers)
        while not stream.done:
            await stream.next_tokens()
        seq = stream.seq
        if seq.finish_reason == "abort":  # the server is shutting down
            return _error(ApiError(503, "server shutting down", "ServiceUnavailableError"))
        body = answer.body(seq.output, seq.finish_reason, len(parsed.prompt), seq.cached_tokens)
        return web.Response(body=body, content_type="application/json", headers=headers)

    async def _stream(
        self,
        request: web.Request,
        parsed: Parsed,
        stream: TokenStream,
        answer: AnswerFormat,
        headers: dict[str, str],
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={**_SSE_HEADERS, **headers})
        try:
            await response.prepare(request)
        except ConnectionResetError:  # the client left before the first byte: no server error
            return response
        transport = request.transport
        if transport is None:
            return response  # the client is already gone; the caller aborts
        finished: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        stream.listener = SseWriter(stream, transport, answer, finished)
        stream.listener()  # anything produced before we listened
        if not await finished:
            return response
        seq = stream.seq
        tail = b""
        if parsed.include_usage:
            tail = answer.fmt.usage_event(len(parsed.prompt), len(seq.output), seq.cached_tokens)
        # the client may leave between its last token and the end of the stream: nothing is
        # left to tell it, and it is no server error
        with contextlib.suppress(ConnectionResetError):
            await response.write(tail + DONE_EVENT)
            await response.write_eof()
        return response

    # -- embeddings and the tokenizer ----------------------------------------------------------

    async def _embeddings(self, request: web.Request) -> web.Response:
        body = await request.read()
        failed = self._failed(request, body)
        if failed is not None:
            return failed
        parsed = parse_embedding_request(body, self.config)
        if isinstance(parsed, ApiError):
            return _error(parsed)
        answer = embedding_body(
            parsed, "embd-" + uuid.uuid4().hex, int(self.clock.now()), self.config.model
        )
        return _json(answer, _echo_id(request))

    async def _tokenize(self, request: web.Request) -> web.Response:
        return _json(tokenize_body(await request.read(), self.config))

    async def _detokenize(self, request: web.Request) -> web.Response:
        return _json(detokenize_body(await request.read(), self.config))

    # -- the rest -----------------------------------------------------------------------------

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [self._model_card()]}, dumps=_dumps)

    async def _model(self, request: web.Request) -> web.Response:
        model_id = request.match_info["model_id"]
        if model_id != self.config.model:
            err = ApiError(404, f"The model `{model_id}` does not exist.", "NotFoundError", "model")
            return _error(err)
        return web.json_response(self._model_card(), dumps=_dumps)

    def _model_card(self) -> dict[str, Any]:
        cfg = self.config
        return {
            "id": cfg.model,
            "object": "model",
            "created": int(time.time()),
            "owned_by": "sluiceway-sim",
            "root": cfg.model,
            "parent": None,
            "max_model_len": cfg.max_model_len,
        }

    async def _health(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _metrics(self, request: web.Request) -> web.Response:
        return web.Response(
            body=render_metrics(self.engine, lag=self._lag).encode(),
            headers={"Content-Type": CONTENT_TYPE},
        )

    async def _get_config(self, request: web.Request) -> web.Response:
        return web.json_response(config_view(self.config), dumps=_dumps)

    async def _post_config(self, request: web.Request) -> web.Response:
        try:
            changes = orjson.loads(await request.read())
        except orjson.JSONDecodeError as exc:
            return _error(ApiError(400, f"malformed JSON body: {exc}"))
        if not isinstance(changes, dict):
            return _error(ApiError(400, "body must be a JSON object of settings"))
        try:
            config = apply_admin_changes(self.config, changes)
        except ConfigError as exc:
            return _error(ApiError(400, str(exc), param=exc.field))
        self._install(config)
        return web.json_response(config_view(config), dumps=_dumps)

    def apply_config(self, changes: Mapping[str, Any]) -> SimConfig:
        """Apply run-time settings in ``SimConfig`` units (seconds); ConfigError names a bad
        or start-time-only key."""
        for key in changes:
            if key.replace("-", "_") not in RUNTIME_FIELDS:
                raise ConfigError("cannot be changed at run time", field=key)
        config = self.config.replace(changes)
        self._install(config)
        return config

    def _install(self, config: SimConfig) -> None:
        self.engine.update_config(config)
        self.driver.poke()


@web.middleware
async def _openai_error_envelope(request: web.Request, handler: Any) -> web.StreamResponse:
    """Unknown routes and wrong methods answer in the OpenAI error envelope, not plain text."""
    try:
        response: web.StreamResponse = await handler(request)
    except web.HTTPNotFound:
        return _error(ApiError(404, f"Not Found: {request.method} {request.path}", "NotFoundError"))
    except web.HTTPMethodNotAllowed as exc:
        allowed = ", ".join(sorted(exc.allowed_methods))
        err = ApiError(405, f"Method {request.method} not allowed on {request.path}; use {allowed}")
        answer = _error(ApiError(err.status, err.message, "MethodNotAllowedError"))
        answer.headers["Allow"] = allowed
        return answer
    return response


def _refusal(outcome: Admission) -> ApiError:
    if outcome is Admission.QUEUE_FULL:
        return ApiError(429, "waiting queue is full", "RateLimitError")
    return ApiError(400, "request does not fit max_model_len or the KV-cache pool")


def _error(err: ApiError) -> web.Response:
    return web.Response(
        status=err.status, body=api_error_body(err), content_type="application/json"
    )


def _json(answer: bytes | ApiError, headers: dict[str, str] | None = None) -> web.Response:
    if isinstance(answer, ApiError):
        return _error(answer)
    return web.Response(body=answer, content_type="application/json", headers=headers)


def _failure_response(failure: Failure) -> web.Response:
    err = ApiError(failure.status, failure.message, failure.type)
    response = _error(err)
    if failure.retry_after is not None:
        response.headers["Retry-After"] = failure.retry_after
    return response


def _echo_id(request: web.Request) -> dict[str, str]:
    value = request.headers.get("x-request-id")
    return {"x-request-id": value} if value else {}


def _response_id(kind: Kind) -> str:
    return ("chatcmpl-" if kind == "chat" else "cmpl-") + uuid.uuid4().hex


def _dumps(value: Any) -> str:
    return orjson.dumps(value).decode()
