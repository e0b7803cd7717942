"""The router reads an OpenAI body once: model, stream, token estimate, prefix, and the body that
goes upstream (usage asked for when a client streams without asking)."""

from __future__ import annotations

import orjson
import pytest

from sluiceway.router.request_facts import BadRequest, read_request_facts
from sluiceway.router.routes import ROUTES


def test_stream_without_usage_gets_include_usage_and_strip() -> None:
    facts = read_request_facts(
        b'{"model":"m","prompt":"hello world!","stream":true,"max_tokens":9}'
    )
    assert facts.stream and facts.strip_usage
    assert orjson.loads(facts.body)["stream_options"] == {"include_usage": True}
    assert (facts.model, facts.max_tokens, facts.prompt_tokens) == ("m", 9, 3)


def test_body_untouched_when_the_client_asked_for_usage_or_does_not_stream() -> None:
    raw = b'{"model":"m","prompt":"x","stream":true,"stream_options":{"include_usage":true}}'
    assert read_request_facts(raw).body == raw and not read_request_facts(raw).strip_usage
    plain = b'{"model":"m","messages":[{"role":"user","content":"hi"}]}'
    facts = read_request_facts(plain)
    assert facts.body == plain and not facts.stream and facts.max_tokens == 16


@pytest.mark.parametrize("raw", [b"not json", b"[1, 2]"])
def test_bad_bodies(raw: bytes) -> None:
    with pytest.raises(BadRequest):
        read_request_facts(raw)


@pytest.mark.parametrize("field", ["messages", "prompt", "stream_options"])
def test_a_body_nested_past_the_limit_is_a_bad_request_not_a_server_error(field: str) -> None:
    # orjson reads 1024 levels but writes 254: 300 levels of messages once failed as a 500.
    deep = b"[" * 300 + b"1" + b"]" * 300
    raw = b'{"model":"m","stream":true,"' + field.encode() + b'":' + deep + b"}"
    with pytest.raises(BadRequest, match="nested deeper than 64 levels"):
        read_request_facts(raw)
    shallow = b'{"model":"m","messages":' + b"[" * 63 + b"1" + b"]" * 63 + b"}"
    assert read_request_facts(shallow).model == "m"


def test_an_input_only_route_costs_its_input_and_no_output() -> None:
    rule = ROUTES["/v1/embeddings"].cost
    assert rule is not None
    raw = b'{"model":"e","input":["' + b"x" * 400 + b'"],"stream":true}'
    facts = read_request_facts(raw, rule)
    assert (facts.model, facts.max_tokens) == ("e", 0)
    assert facts.prompt_tokens == 101  # the input as JSON, 404 bytes, ~4 a token
    assert facts.body == raw and not facts.strip_usage  # nothing to ask usage of


def test_token_ids_count_one_each() -> None:
    rule = ROUTES["/detokenize"].cost
    assert rule is not None
    facts = read_request_facts(b'{"model":"m","tokens":[101,102,103,104,105,106,107]}', rule)
    assert (facts.prompt_tokens, facts.max_tokens) == (7, 0)
    prompt = read_request_facts(b'{"model":"m","prompt":[5,6,7],"max_tokens":2}')
    assert (prompt.prompt_tokens, prompt.max_tokens) == (3, 2)


def test_responses_cost_instructions_and_input_plus_max_output_tokens() -> None:
    rule = ROUTES["/v1/responses"].cost
    assert rule is not None
    raw = b'{"model":"m","instructions":"be brief","input":"' + b"y" * 40 + b'",'
    streamed = read_request_facts(raw + b'"max_output_tokens":50,"stream":true}', rule)
    assert (streamed.prompt_tokens, streamed.max_tokens) == (2 + 10, 50)
    assert streamed.prefix.startswith(b"be brief") and not streamed.strip_usage
    assert b"stream_options" not in streamed.body  # not a Responses API field
    assert read_request_facts(raw + b'"stream":false}', rule).max_tokens == 16


@pytest.mark.parametrize(
    ("path", "body", "tokens"),
    [
        ("/v1/score", b'{"text_1":"' + b"a" * 20 + b'","text_2":"' + b"b" * 20 + b'"}', 10),
        ("/score", b'{"queries":"' + b"a" * 8 + b'","documents":["' + b"b" * 30 + b'"]}', 2 + 8),
        ("/v2/rerank", b'{"query":"' + b"q" * 12 + b'","documents":["' + b"d" * 30 + b'"]}', 3 + 8),
        ("/tokenize", b'{"prompt":"' + b"p" * 16 + b'"}', 4),
    ],
)
def test_score_rerank_and_tokenize_cost_their_inputs(path: str, body: bytes, tokens: int) -> None:
    rule = ROUTES[path].cost
    assert rule is not None
    facts = read_request_facts(body, rule)
    assert (facts.prompt_tokens, facts.max_tokens) == (tokens, 0)
