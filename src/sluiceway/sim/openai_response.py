"""OpenAI response bodies and SSE events for the simulator, as bytes (no HTTP library here).

Streaming chunks are pre-split around the token text so the hot path only escapes one word per
event.
"""

from __future__ import annotations

from typing import Any

import orjson

from sluiceway.sim.openai_request import ApiError, Kind
from sluiceway.sim.stop_strings import StopCut
from sluiceway.sim.tokenizer import detokenize_one, nearby_token, word_json
from sluiceway.wire.api_errors import error_document

__all__ = ["DONE_EVENT", "AnswerFormat", "ChunkFormat", "api_error_body", "usage"]


def api_error_body(err: ApiError) -> bytes:
    """The OpenAI error envelope (``sluiceway.wire.api_errors``) with vLLM's ``param``."""
    payload = error_document(err.message, type=err.type, code=err.status)
    payload["error"]["param"] = err.param
    return orjson.dumps(payload)


class ChunkFormat:
    """Byte templates for one request's responses (completion or chat)."""

    def __init__(self, kind: Kind, response_id: str, created: int, model: str) -> None:
        self.kind = kind
        head = {"id": response_id, "object": "", "created": created, "model": model}
        if kind == "chat":
            head["object"] = "chat.completion.chunk"
        else:
            head["object"] = "text_completion"
        self._head = head
        self._prefix = b"data: " + orjson.dumps(head)[:-1] + b',"choices":[{"index":0,'
        # The plain mid-stream event is these two around the token's JSON: one concatenation.
        close = b"}" if kind == "chat" else b""
        self._next_head = self._prefix + (b'"delta":{"content":' if kind == "chat" else b'"text":')
        self._next_tail = close + b',"logprobs":null,"finish_reason":null}]}\n\n'

    def token_event(self, text: str, *, first: bool, finish_reason: str | None) -> bytes:
        """One SSE event carrying one token."""
        return self.event(orjson.dumps(text), first, finish_reason)

    def event(
        self, text_json: bytes, first: bool, finish_reason: str | None, logprobs: bytes = b"null"
    ) -> bytes:
        """One SSE event; ``text_json`` and ``logprobs`` are already JSON."""
        if not first and finish_reason is None and logprobs == b"null":
            return self._next_head + text_json + self._next_tail
        if self.kind == "chat":
            role = b'"role":"assistant",' if first else b""
            body = b'"delta":{' + role + b'"content":' + text_json + b"}"
        else:
            body = b'"text":' + text_json
        reason = b"null" if finish_reason is None else _REASONS[finish_reason]
        return (
            self._prefix + body + b',"logprobs":' + logprobs + b',"finish_reason":' + reason
            + b"}]}\n\n"
        )  # fmt: skip

    def usage_event(self, prompt_tokens: int, completion_tokens: int, cached_tokens: int) -> bytes:
        """The trailing usage chunk (``stream_options.include_usage``)."""
        counts = usage(prompt_tokens, completion_tokens, cached_tokens)
        chunk = {**self._head, "choices": [], "usage": counts}
        return b"data: " + orjson.dumps(chunk) + b"\n\n"

    def full_response(
        self,
        text: str,
        finish_reason: str | None,
        prompt_tokens: int,
        completion_tokens: int,
        cached_tokens: int,
        logprobs: dict[str, Any] | None = None,
    ) -> bytes:
        """The non-streaming response body."""
        if self.kind == "chat":
            choice: dict[str, Any] = {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "logprobs": logprobs,
                "finish_reason": finish_reason,
            }
            obj = "chat.completion"
        else:
            choice = {
                "index": 0,
                "text": text,
                "logprobs": logprobs,
                "finish_reason": finish_reason,
            }
            obj = "text_completion"
        body = {
            **self._head,
            "object": obj,
            "choices": [choice],
            "usage": usage(prompt_tokens, completion_tokens, cached_tokens),
        }
        return orjson.dumps(body)


DONE_EVENT = b"data: [DONE]\n\n"
_REASONS: dict[str, bytes] = {r: orjson.dumps(r) for r in ("stop", "length", "abort")}


class AnswerFormat:
    """How one request's tokens become text, SSE events and the final body.

    The plain case (no echo, stop string or logprobs) takes the precomputed JSON of each word;
    the others render the visible text (echo prefix on the first token, text cut where a stop
    string begins) and cheap logprobs of the right shape: the chosen token's logprob is in
    [-0.98, -0.01] and each alternative is less likely than the one before.
    """

    def __init__(
        self,
        fmt: ChunkFormat,
        *,
        echo_text: str = "",
        stop: StopCut | None = None,
        logprobs: int | None = None,
    ) -> None:
        self.fmt = fmt
        self._echo = echo_text
        self._stop = stop
        self._logprobs = logprobs
        self._plain = not echo_text and stop is None and logprobs is None
        self._offset = len(echo_text)  # text_offset of the next token (completions logprobs)

    def events(self, start: int, tokens: list[int], finish_reason: str | None) -> bytes:
        """SSE events for ``tokens`` (generated tokens ``start``...); ``finish_reason`` on the
        last one when the request has finished, else None."""
        last = len(tokens) - 1
        fmt = self.fmt
        if self._plain:
            if last == 0:  # the usual case: one token per event, one event per write
                return fmt.event(word_json(tokens[0]), start == 0, finish_reason)
            return b"".join(
                fmt.event(word_json(tok), start + i == 0, finish_reason if i == last else None)
                for i, tok in enumerate(tokens)
            )
        parts = []
        for i, tok in enumerate(tokens):
            index = start + i
            text = self.text(index, tok)
            lp = (
                b"null"
                if self._logprobs is None
                else orjson.dumps(self._all_logprobs([tok], [text]))
            )
            head = self._echo if index == 0 else ""
            reason = finish_reason if i == last else None
            parts.append(fmt.event(orjson.dumps(head + text), index == 0, reason, lp))
        return b"".join(parts)

    def text(self, index: int, token: int) -> str:
        """The visible text of generated token ``index`` (without the echo prefix)."""
        text = detokenize_one(token)
        return text if self._stop is None else self._stop.text(index, text)

    def body(
        self, tokens: list[int], finish_reason: str | None, prompt_tokens: int, cached: int
    ) -> bytes:
        """The non-streaming response body."""
        texts = [self.text(i, tok) for i, tok in enumerate(tokens)]
        logprobs = None if self._logprobs is None else self._all_logprobs(tokens, texts)
        return self.fmt.full_response(
            self._echo + "".join(texts), finish_reason, prompt_tokens, len(tokens), cached,
            logprobs,
        )  # fmt: skip

    def _all_logprobs(self, tokens: list[int], texts: list[str]) -> dict[str, Any]:
        top = self._logprobs or 0
        if self.fmt.kind == "chat":
            pairs = zip(tokens, texts, strict=True)
            return {"content": [_chat_logprob(t, text, top) for t, text in pairs]}
        offsets = []
        for text in texts:
            offsets.append(self._offset)
            self._offset += len(text)
        return {
            "tokens": texts,
            "token_logprobs": [_logprob(t) for t in tokens],
            "top_logprobs": [
                _completion_top(t, text, top) for t, text in zip(tokens, texts, strict=True)
            ],
            "text_offset": offsets,
        }


def _logprob(token: int) -> float:
    return -((token % 98) + 1) / 100


def _alternatives(token: int, count: int) -> list[tuple[str, float]]:
    """``count`` other words, each less likely than the last (the chosen one is likelier)."""
    base = _logprob(token)
    return [
        (detokenize_one(nearby_token(token, 1 + j)), base - 1.0 - 0.5 * j) for j in range(count)
    ]


def _completion_top(token: int, text: str, top: int) -> dict[str, float]:
    return {text: _logprob(token), **dict(_alternatives(token, top))}


def _chat_entry(text: str, logprob: float) -> dict[str, Any]:
    return {"token": text, "logprob": logprob, "bytes": list(text.encode())}


def _chat_logprob(token: int, text: str, top: int) -> dict[str, Any]:
    chosen = _chat_entry(text, _logprob(token))
    others = [_chat_entry(t, lp) for t, lp in _alternatives(token, max(0, top - 1))]
    return {**chosen, "top_logprobs": [dict(chosen), *others] if top else []}


def usage(prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0) -> dict[str, Any]:
    """OpenAI ``usage``; ``prompt_tokens_details.cached_tokens`` is the prefix-cache hit."""
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": cached_tokens},
    }
