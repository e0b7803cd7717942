"""vLLM's /tokenize and /detokenize over the simulator's tokenizer."""

from __future__ import annotations

import orjson

from sluiceway.sim.config import SimConfig
from sluiceway.sim.openai_request import ApiError
from sluiceway.sim.tokenizer import chat_prompt, tokenize
from sluiceway.sim.tokenizer_api import detokenize_body, tokenize_body

CONFIG = SimConfig(max_model_len=512)


def _tokenize(**body: object) -> dict[str, object]:
    answer = tokenize_body(orjson.dumps(body), CONFIG)
    assert isinstance(answer, bytes), answer
    out: dict[str, object] = orjson.loads(answer)
    return out


def test_tokenize_a_prompt_with_and_without_token_strings() -> None:
    assert _tokenize(model="sim-model", prompt="Hello, river!") == {
        "count": 4,
        "max_model_len": 512,
        "tokens": tokenize("Hello, river!"),
        "token_strs": None,
    }
    assert _tokenize(prompt="Hello, river!", return_token_strs=True)["token_strs"] == [
        "Hello",
        ",",
        "river",
        "!",
    ]


def test_tokenize_chat_messages_as_a_generation_prompt_is_rendered() -> None:
    messages = [{"role": "user", "content": "hi"}]
    assert _tokenize(messages=messages)["tokens"] == tokenize(chat_prompt(messages))


def test_detokenize_round_trips_generated_words() -> None:
    ids = tokenize(" river gate")
    answer = detokenize_body(orjson.dumps({"tokens": ids}), CONFIG)
    assert answer == b'{"prompt":" river gate"}'


def test_bad_bodies() -> None:
    for body, param in (
        ({"model": "other", "prompt": "x"}, "model"),
        ({"prompt": 3}, "prompt"),
        ({"messages": "hi"}, "messages"),
    ):
        err = tokenize_body(orjson.dumps(body), CONFIG)
        assert isinstance(err, ApiError) and err.param == param
    err = detokenize_body(b'{"tokens": [1, -2]}', CONFIG)
    assert isinstance(err, ApiError) and (err.status, err.param) == (400, "tokens")
    assert isinstance(detokenize_body(b"[", CONFIG), ApiError)
