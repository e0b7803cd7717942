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
