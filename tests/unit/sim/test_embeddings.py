"""The simulator's embeddings: deterministic unit vectors from the input, vLLM's answer shape."""

from __future__ import annotations

import base64
import math
import struct

import orjson
import pytest

from sluiceway.sim.config import SimConfig
from sluiceway.sim.embeddings import (
    DIMENSIONS,
    EmbeddingRequest,
    embed,
    embedding_body,
    parse_embedding_request,
)
from sluiceway.sim.openai_request import ApiError
from sluiceway.sim.tokenizer import tokenize

CONFIG = SimConfig(max_model_len=16)


def _parse(**body: object) -> EmbeddingRequest:
    parsed = parse_embedding_request(orjson.dumps(body), CONFIG)
    assert isinstance(parsed, EmbeddingRequest), parsed
    return parsed


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_every_input_form_becomes_token_ids() -> None:
    ids = tuple(tokenize("the river flows"))
    assert _parse(model="sim-model", input="the river flows").inputs == (ids,)
    assert _parse(input=["a b", "c"]).inputs == (tuple(tokenize("a b")), tuple(tokenize("c")))
    assert _parse(input=[5, 6, 7]).inputs == ((5, 6, 7),)
    assert _parse(input=[[5], [6, 7]]).inputs == ((5,), (6, 7))
    chat = _parse(messages=[{"role": "user", "content": "hi"}])
    assert len(chat.inputs) == 1 and len(chat.inputs[0]) > 1
    assert (chat.dimensions, chat.encoding_format) == (DIMENSIONS, "float")


@pytest.mark.parametrize(
    ("body", "status", "param"),
    [
        ({"model": "other", "input": "x"}, 404, "model"),
        ({"input": ""}, 400, "input"),
        ({"input": []}, 400, "input"),
        ({"input": ["a", 3]}, 400, "input"),
        ({"input": "w " * 17}, 400, "input"),  # past max_model_len
        ({"input": "x", "dimensions": 0}, 400, "dimensions"),
        ({"input": "x", "encoding_format": "bytes"}, 400, "encoding_format"),
        ({"messages": []}, 400, "messages"),
    ],
)
def test_bad_bodies_are_vllm_like_errors(body: dict[str, object], status: int, param: str) -> None:
    err = parse_embedding_request(orjson.dumps(body), CONFIG)
    assert isinstance(err, ApiError) and (err.status, err.param) == (status, param)


def test_vectors_are_deterministic_unit_vectors_closer_for_shared_tokens() -> None:
    river = embed(tuple(tokenize("the river bank")), 32)
    assert river == embed(tuple(tokenize("the river bank")), 32)
    assert math.isclose(_cosine(river, river), 1.0)
    near = embed(tuple(tokenize("the river gate")), 32)
    far = embed(tuple(tokenize("quota metric signal")), 32)
    assert _cosine(river, near) > _cosine(river, far)


def test_the_answer_has_openais_shape_and_usage() -> None:
    request = _parse(input=["a b", "c d e"], dimensions=8)
    answer = orjson.loads(embedding_body(request, "embd-1", 7, "sim-model"))
    assert (answer["id"], answer["object"], answer["created"], answer["model"]) == (
        "embd-1",
        "list",
        7,
        "sim-model",
    )
    assert [d["index"] for d in answer["data"]] == [0, 1]
    assert all(d["object"] == "embedding" and len(d["embedding"]) == 8 for d in answer["data"])
    assert answer["usage"] == {
        "prompt_tokens": 5,
        "total_tokens": 5,
        "completion_tokens": 0,
        "prompt_tokens_details": None,
    }


def test_base64_is_little_endian_float32_of_the_same_vector() -> None:
    floats = orjson.loads(embedding_body(_parse(input="x y"), "e", 0, "m"))["data"][0]
    request = _parse(input="x y", encoding_format="base64")
    packed = orjson.loads(embedding_body(request, "e", 0, "m"))["data"][0]
    raw = base64.b64decode(packed["embedding"])
    decoded = struct.unpack(f"<{len(raw) // 4}f", raw)
    assert len(decoded) == DIMENSIONS
    pairs = zip(decoded, floats["embedding"], strict=True)
    assert all(math.isclose(a, b, rel_tol=1e-6) for a, b in pairs)
