from __future__ import annotations

import orjson
import pytest

from sluiceway.router.identity import BadRequest, header_map, read_identity, read_request_facts


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


def test_newer_objective_spelling_wins_and_defaults() -> None:
    both = {"x-llm-d-inference-objective": "new", "x-gateway-inference-objective": "old"}
    assert read_identity(both).objective == "new"
    assert read_identity({"x-gateway-inference-objective": "old"}).objective == "old"
    empty = read_identity({})
    assert (empty.objective, empty.fairness_id, empty.ttl) == (None, "default-flow", None)


def test_fairness_ttl_and_slo() -> None:
    found = read_identity(
        {
            "x-gateway-inference-fairness-id": "team",
            "x-llm-d-inference-ttl": "1m30s",
            "x-slo-ttft-ms": "250",
        }
    )
    assert (found.fairness_id, found.ttl, found.slo_ttft_ms) == ("team", 90.0, 250)
    assert read_identity({"x-llm-d-inference-ttl": "soon"}).ttl is None


def test_header_map_lower_case_raw() -> None:
    assert header_map([(b"a", b"1"), (b"b", b"2")]) == {"a": "1", "b": "2"}
