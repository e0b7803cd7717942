"""The HTTP side of the dispatch step: one POST, its outcome as an :class:`Attempt`.

Connection errors, resets, body read failures and the per-attempt timeout become transport
attempts (retried by the outcome rules); an HTTP answer of any status is an answer.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import orjson

from sluiceway.clock import Clock
from sluiceway.processor.headers import queued_seconds
from sluiceway.processor.outcome import Attempt, AttemptKind
from sluiceway.processor.results import HttpAnswer
from sluiceway.processor.retry import parse_retry_after
from sluiceway.wire import headers as h

__all__ = ["Upstream", "encode_body", "usage_tokens"]


# The fallback for what orjson refuses (integers beyond 64 bits, keys that are not strings).
_ENCODER = json.JSONEncoder(separators=(",", ":"))


def encode_body(payload: Any) -> bytes:
    """The request body: the entry's payload as compact UTF-8 JSON (an absent payload sends
    ``{}``). orjson encodes the usual payload at a tenth of ``json``'s cost; the standard
    encoder takes what orjson refuses, so every payload that decoded is sent (NaN and the
    infinities, which JSON cannot carry, go as ``null``)."""
    body = {} if payload is None else payload
    try:
        return orjson.dumps(body)
    except TypeError:  # orjson.JSONEncodeError
        return _ENCODER.encode(body).encode()


_DECODER = json.JSONDecoder()
_USAGE_KEY = '"usage"'


def usage_tokens(body: str) -> tuple[int, int] | None:
    """(prompt, completion) tokens from an OpenAI ``usage`` object, best effort.

    Only the ``usage`` object is parsed when it can be found by its key (it comes last in an
    OpenAI answer), not the whole completion; the whole body is parsed otherwise."""
    at = body.rfind(_USAGE_KEY)
    if at < 0:
        return None
    start = body.find("{", at + len(_USAGE_KEY))
    colon = body.find(":", at + len(_USAGE_KEY))
    if start > colon >= 0 and not body[colon + 1 : start].strip():
        try:
            usage, _ = _DECODER.raw_decode(body, start)
            return _counts(usage)
        except (ValueError, TypeError, AttributeError):
            pass
    try:
        return _counts(json.loads(body).get("usage") or {})
    except (ValueError, TypeError, AttributeError):
        return None


def _counts(usage: Any) -> tuple[int, int]:
    return int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))


class Upstream:
    """A pooled aiohttp session for the workers of one processor."""

    def __init__(self, clock: Clock, *, connections: int) -> None:
        self._clock = clock
        self._connections = max(1, connections)
        self._session: aiohttp.ClientSession | None = None
        self._timeout = aiohttp.ClientTimeout(total=None)  # the last attempt's

    async def start(self) -> None:
        connector = aiohttp.TCPConnector(
            limit=self._connections, limit_per_host=self._connections, keepalive_timeout=90
        )
        self._session = aiohttp.ClientSession(connector=connector, auto_decompress=True)

    @property
    def session(self) -> aiohttp.ClientSession:
        """The pooled session (for steps that stream, such as prefix resume)."""
        if self._session is None:
            raise RuntimeError("Upstream.start() was not called")
        return self._session

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def send(
        self, url: str, headers: dict[str, str], body: bytes, *, budget: float
    ) -> Attempt:
        """POST ``body``; ``budget`` is the attempt's budget in scaled seconds."""
        if self._session is None:
            raise RuntimeError("Upstream.start() was not called")
        wall = max(0.001, self._clock.to_wall(budget))
        if wall != self._timeout.total:  # the request timeout (300 s) unless a deadline is nearer
            self._timeout = aiohttp.ClientTimeout(total=wall)
        limit = self._timeout
        try:
            async with self._session.post(url, data=body, headers=headers, timeout=limit) as resp:
                text = await resp.text(errors="replace")
                return self._answer(resp.status, resp.headers, text)
        except TimeoutError:
            return Attempt(AttemptKind.TIMEOUT, error=f"no answer within {budget:g}s")
        except aiohttp.ClientError as exc:
            return Attempt(AttemptKind.CONNECT_ERROR, error=f"{type(exc).__name__}: {exc}")
        except OSError as exc:
            return Attempt(AttemptKind.CONNECT_ERROR, error=f"{type(exc).__name__}: {exc}")

    def _answer(self, status: int, headers: Any, text: str) -> Attempt:
        retry_after = parse_retry_after(headers.get(h.RETRY_AFTER), self._clock.now())
        return Attempt(
            AttemptKind.HTTP,
            HttpAnswer(status, text),
            retry_after=retry_after,
            dropped_reason=headers.get(h.DROPPED_REASON, ""),
            queued=queued_seconds(headers),
        )
