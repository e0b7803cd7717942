"""The router reads an OpenAI body once: model, stream, token estimate, prefix, and the body that
goes upstream (usage asked for when a client streams without asking)."""

from __future__ import annotations

import orjson
import pytest

from sluiceway.router.request_facts import BadRequest, read_request_facts


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
