"""Answer bytes: SSE events and bodies with echo, stop cuts and logprobs of OpenAI's shape."""

from __future__ import annotations

from typing import Any

import orjson

from sluiceway.sim.openai_request import ApiError
from sluiceway.sim.openai_response import AnswerFormat, ChunkFormat, api_error_body
from sluiceway.sim.stop_strings import StopCut
from sluiceway.sim.tokenizer import detokenize_one, output_token

TOKENS = [5, 6, 7]


def _events(raw: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(e.removeprefix(b"data: ")) for e in raw.strip().split(b"\n\n")]


def test_plain_events_carry_one_token_each_and_the_reason_on_the_last() -> None:
    answer = AnswerFormat(ChunkFormat("chat", "id", 1, "m"))
    events = _events(answer.events(0, TOKENS, "length"))
    deltas = [e["choices"][0]["delta"] for e in events]
    assert deltas[0] == {"role": "assistant", "content": detokenize_one(5)}
    assert deltas[2] == {"content": detokenize_one(7)}
    assert [e["choices"][0]["finish_reason"] for e in events] == [None, None, "length"]


def test_echo_and_stop_cut_shape_the_text() -> None:
    cut = StopCut(tokens=3, token=1, chars=2)
    answer = AnswerFormat(ChunkFormat("completion", "id", 1, "m"), echo_text="Q:", stop=cut)
    body = orjson.loads(answer.body(TOKENS, "stop", 2, 0))
    expected = "Q:" + detokenize_one(5) + detokenize_one(6)[:2]
    assert body["choices"][0]["text"] == expected
    assert body["usage"]["completion_tokens"] == 3
    streamed = _events(answer.events(0, TOKENS, "stop"))
    assert "".join(e["choices"][0]["text"] for e in streamed) == expected


def test_completion_logprobs_have_openais_shape() -> None:
    answer = AnswerFormat(ChunkFormat("completion", "id", 1, "m"), logprobs=2)
    logprobs = orjson.loads(answer.body(TOKENS, "length", 2, 0))["choices"][0]["logprobs"]
    assert logprobs["tokens"] == [detokenize_one(t) for t in TOKENS]
    assert len(logprobs["token_logprobs"]) == 3 and all(lp < 0 for lp in logprobs["token_logprobs"])
    assert all(len(top) == 3 for top in logprobs["top_logprobs"])  # the chosen one + 2
    assert logprobs["text_offset"][1] == len(detokenize_one(5))


def test_alternatives_of_generated_tokens_are_other_words() -> None:
    generated = [output_token(3, i) for i in range(50)]
    answer = AnswerFormat(ChunkFormat("completion", "id", 1, "m"), logprobs=5)
    logprobs = orjson.loads(answer.body(generated, "length", 2, 0))["choices"][0]["logprobs"]
    for text, top in zip(logprobs["tokens"], logprobs["top_logprobs"], strict=True):
        assert len(top) == 6 and max(top, key=top.__getitem__) == text


def test_chat_logprobs_have_openais_shape_streamed_too() -> None:
    answer = AnswerFormat(ChunkFormat("chat", "id", 1, "m"), logprobs=3)
    events = _events(answer.events(0, TOKENS, "length"))
    content = events[0]["choices"][0]["logprobs"]["content"]
    assert len(content) == 1
    entry = content[0]
    assert entry["token"] == detokenize_one(5) and entry["bytes"] == list(entry["token"].encode())
    tops = entry["top_logprobs"]
    assert len(tops) == 3 and tops[0]["token"] == entry["token"]
    assert [t["logprob"] for t in tops] == sorted((t["logprob"] for t in tops), reverse=True)


def test_error_body_is_the_openai_envelope() -> None:
    body = orjson.loads(api_error_body(ApiError(404, "gone", "NotFoundError", "model")))
    assert body == {
        "error": {"message": "gone", "type": "NotFoundError", "param": "model", "code": 404}
    }
