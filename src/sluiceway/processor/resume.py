"""Prefix resume: continue an evicted completion from the text it had already generated.

With ``resume: true`` on a queue, a ``/v1/completions`` request with a text prompt is sent
streamed (whatever the caller asked) and its text is kept as it arrives. An eviction reaches the
worker as a 429 whose dropped reason is ``evicted`` (before the first byte), as the router's
terminal SSE event ``{"error": {"code": "evicted"}}`` once streaming (``"type": "evicted"`` from
routers before it), or as a stream that ends
without ``[DONE]``; the router's error event of code 502 (its model server cut the stream)
counts the same way. The worker then sends prompt + generated text again with the remaining
``max_tokens``, so the model server recomputes only a prefill (cheap when its prefix cache holds
it) instead of the lost decode work. The caller gets one non-streamed completion: the stitched
text, the last finish reason, and ``usage`` summed over the attempts.

Anything else (another status, a transport error, a body that cannot resume: chat messages, a
token-id prompt, ``n`` > 1, ``echo``, ``logprobs``) ends the step as a plain attempt would, so the
usual retry rules apply. Pure parts (:class:`ResumeState`, :func:`parse_event`) are separate from
the HTTP loop (:func:`send_resuming`).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from sluiceway.clock import Clock
from sluiceway.processor.headers import queued_seconds
from sluiceway.processor.outcome import Attempt, AttemptKind
from sluiceway.processor.results import HttpAnswer
from sluiceway.processor.retry import parse_retry_after
from sluiceway.wire import headers as h

__all__ = ["ResumeState", "StreamEvent", "can_resume", "parse_event", "send_resuming"]

COMPLETIONS_PATH = "/v1/completions"


def can_resume(path: str, payload: Any) -> bool:
    """Only a single-choice text completion can be continued from its text."""
    if not path.rstrip("/").endswith(COMPLETIONS_PATH) or not isinstance(payload, dict):
        return False
    if not isinstance(payload.get("prompt"), str) or not isinstance(payload.get("max_tokens"), int):
        return False
    return payload.get("n", 1) == 1 and not payload.get("echo") and payload.get("logprobs") is None


@dataclass(frozen=True)
class StreamEvent:
    """One SSE data line: text, a finish reason, usage, the end, or an eviction."""

    text: str = ""
    finish_reason: str | None = None
    usage: dict[str, int] | None = None
    done: bool = False
    evicted: bool = False
    error: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None


# The router ends a stream its model server cut with an error event of code 502: the text so far
# is good, so it resumes like an eviction (another server continues it).
_UPSTREAM_CUT = 502


def _resumable(error: dict[str, Any]) -> bool:
    evicted = h.REASON_EVICTED in (error.get("code"), error.get("type"))
    return evicted or error.get("code") == _UPSTREAM_CUT


def parse_event(line: bytes) -> StreamEvent | None:
    """The event of one SSE line (None for comments, blank lines and other fields)."""
    line = line.strip()
    if not line.startswith(b"data:"):
        return None
    data = line[5:].strip()
    if data == b"[DONE]":
        return StreamEvent(done=True)
    try:
        event = json.loads(data)
    except ValueError:
        return None
    if not isinstance(event, dict):
        return None
    if isinstance(event.get("error"), dict):
        error = event["error"]
        return StreamEvent(evicted=_resumable(error), error=error)
    choices = event.get("choices") or []
    choice = choices[0] if choices and isinstance(choices[0], dict) else {}
    usage = event.get("usage")
    meta = {k: event[k] for k in ("id", "created", "model", "object") if k in event}
    return StreamEvent(
        text=str(choice.get("text") or ""),
        finish_reason=choice.get("finish_reason"),
        usage=usage if isinstance(usage, dict) else None,
        meta=meta,
    )


@dataclass
class ResumeState:
    """What the attempts so far produced (pure)."""

    payload: dict[str, Any]
    text: str = ""
    generated: int = 0  # tokens kept, counted one per streamed text event or from usage
    prompt_tokens: int = 0
    attempts: int = 0
    evictions: int = 0
    queued: float = 0.0  # seconds the attempts waited in the router's flow control
    finish_reason: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    _attempt_tokens: int = 0
    _attempt_usage: dict[str, int] | None = None

    @property
    def remaining(self) -> int:
        return max(0, int(self.payload["max_tokens"]) - self.generated)

    def body(self) -> bytes:
        """The next attempt: prompt + generated text, the remaining tokens, streamed."""
        body = dict(self.payload)
        body["prompt"] = str(self.payload["prompt"]) + self.text
        body["max_tokens"] = self.remaining
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        return json.dumps(body, separators=(",", ":")).encode()

    def begin(self) -> None:
        self.attempts += 1
        self._attempt_tokens, self._attempt_usage = 0, None

    def add(self, event: StreamEvent) -> None:
        if event.meta and not self.meta:
            self.meta = dict(event.meta)
        if event.text:
            self.text += event.text
            self._attempt_tokens += 1
        if event.finish_reason:
            self.finish_reason = event.finish_reason
        if event.usage is not None:
            self._attempt_usage = event.usage

    def end_attempt(self, *, evicted: bool) -> None:
        """Count the attempt's tokens (the server's usage when it sent one)."""
        usage = self._attempt_usage
        if usage is not None:
            self.generated += int(usage.get("completion_tokens", self._attempt_tokens))
            self.prompt_tokens += int(usage.get("prompt_tokens", 0))
        else:
            self.generated += self._attempt_tokens
        self.evictions += int(evicted)

    def result(self) -> str:
        """One non-streamed completion body."""
        body = {
            "id": self.meta.get("id", ""),
            "object": "text_completion",
            "created": self.meta.get("created", int(time.time())),
            "model": self.meta.get("model", self.payload.get("model", "")),
            "choices": [
                {
                    "index": 0,
                    "text": self.text,
                    "logprobs": None,
                    "finish_reason": self.finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.generated,
                "total_tokens": self.prompt_tokens + self.generated,
            },
        }
        return json.dumps(body, separators=(",", ":"))


async def _read_stream(resp: aiohttp.ClientResponse, state: ResumeState) -> bool | StreamEvent:
    """True when the stream finished with ``[DONE]``, False when it was cut or evicted, or the
    error event that ended it."""
    async for line in resp.content:
        event = parse_event(line)
        if event is None:
            continue
        if event.done:
            return True
        if event.error is not None:
            return False if event.evicted else event
        state.add(event)
    return False


async def send_resuming(
    session: aiohttp.ClientSession,
    clock: Clock,
    url: str,
    headers: dict[str, str],
    payload: dict[str, Any],
    *,
    budget: float,
    ttl: Callable[[], str] | None = None,
) -> Attempt:
    """Send ``payload`` streamed, resuming after each eviction until it completes, another
    answer ends it, or ``budget`` (scaled seconds, all attempts together) runs out; ``ttl``
    renews the router's queue budget for each resumed attempt (less time is left)."""
    state = ResumeState(payload)
    try:
        async with asyncio.timeout(max(0.001, clock.to_wall(budget))):
            while state.remaining > 0 or state.attempts == 0:
                if ttl is not None and state.attempts:
                    headers[h.INFERENCE_TTL] = ttl()
                answer = await _one_attempt(session, clock, url, headers, state)
                if answer is not None:
                    return answer
    except TimeoutError:
        return Attempt(AttemptKind.TIMEOUT, error=f"no answer within {budget:g}s")
    except (aiohttp.ClientError, OSError) as exc:
        return Attempt(AttemptKind.CONNECT_ERROR, error=f"{type(exc).__name__}: {exc}")
    return Attempt(AttemptKind.HTTP, HttpAnswer(200, state.result()), queued=state.queued)


async def _one_attempt(
    session: aiohttp.ClientSession,
    clock: Clock,
    url: str,
    headers: dict[str, str],
    state: ResumeState,
) -> Attempt | None:
    """One streamed attempt; None when the request should go on (evicted, or finished)."""
    state.begin()
    async with session.post(url, data=state.body(), headers=headers) as resp:
        state.queued += queued_seconds(resp.headers)
        if resp.status != 200:
            text = await resp.text(errors="replace")
            if resp.status == 429 and resp.headers.get(h.DROPPED_REASON) == h.REASON_EVICTED:
                state.end_attempt(evicted=True)
                return None
            retry_after = parse_retry_after(resp.headers.get(h.RETRY_AFTER), clock.now())
            reason = resp.headers.get(h.DROPPED_REASON, "")
            answer = HttpAnswer(resp.status, text)
            return Attempt(
                AttemptKind.HTTP,
                answer,
                retry_after=retry_after,
                dropped_reason=reason,
                queued=state.queued,
            )
        ended = await _read_stream(resp, state)
    if isinstance(ended, StreamEvent):
        status = int((ended.error or {}).get("code") or 500)
        return Attempt(AttemptKind.HTTP, HttpAnswer(status, json.dumps({"error": ended.error})))
    state.end_attempt(evicted=not ended)
    if ended:
        return Attempt(AttemptKind.HTTP, HttpAnswer(200, state.result()), queued=state.queued)
    return None
