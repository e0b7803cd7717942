"""Queue entries: exact JSON, tolerant decoding, readable vs unreadable bad entries, and the
round trip of any envelope."""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluiceway.errors import WireError
from sluiceway.wire import (
    EntryError,
    Envelope,
    ErrorCode,
    Internal,
    RequestData,
    decode_envelope,
    decode_request_data,
    derive_request_token,
    encode_envelope,
)

# The guide's publish() member: raw ZADD with an empty internal block.
GUIDE_MEMBER = (
    '{"internal":{},"request_kind":"plain","data":{"id":"premium-1764044000-4242-0001",'
    '"created":1764044000,"deadline":1764044300,"payload":{"model":"Qwen/Qwen3-32B",'
    '"prompt":"summarize this","max_tokens":64},"metadata":{"team":"premium"}}}'
)

# llm-d-async's example queue entry, written compactly.
CONTRACT_MEMBER = (
    '{"internal":{"request_token":"0123456789abcdef0123456789abcdef",'
    '"request_queue_name":"team-batch","result_queue_name":"results-list",'
    '"labels":{"tier":"batch"}},"request_kind":"plain","data":{"id":"batch-1-0001",'
    '"created":1764044000,"deadline":1764044300,"payload":{"model":"Qwen/Qwen3-32B",'
    '"prompt":"summarize this","max_tokens":64},"metadata":{"team":"batch"},'
    '"endpoint":"/v1/completions"}}'
)


def test_guide_publish_entry_round_trips_byte_exact() -> None:
    env = decode_envelope(GUIDE_MEMBER)
    assert env.id == "premium-1764044000-4242-0001"
    assert env.data.metadata == {"team": "premium"}
    assert env.internal == Internal()
    assert encode_envelope(env) == GUIDE_MEMBER


def test_contract_entry_round_trips_byte_exact() -> None:
    env = decode_envelope(CONTRACT_MEMBER)
    assert env.request_token == "0123456789abcdef0123456789abcdef"
    assert env.result_route == "results-list"
    assert env.internal.labels == {"tier": "batch"}
    assert encode_envelope(env) == CONTRACT_MEMBER


def test_token_is_derived_from_raw_member_when_absent() -> None:
    env = decode_envelope(GUIDE_MEMBER.encode())
    expected = hashlib.sha256(GUIDE_MEMBER.encode()).hexdigest()[:32]
    assert env.request_token == expected == derive_request_token(GUIDE_MEMBER)


def test_token_derivation_uses_raw_bytes_not_reencoding() -> None:
    spaced = json.dumps(json.loads(GUIDE_MEMBER))  # same entry, different bytes
    assert decode_envelope(spaced).request_token == derive_request_token(spaced)
    assert decode_envelope(spaced).request_token != decode_envelope(GUIDE_MEMBER).request_token


def test_retry_keeps_the_derived_token_and_counts() -> None:
    env = decode_envelope(GUIDE_MEMBER)
    again = decode_envelope(encode_envelope(env.with_retry_count(3)))
    assert again.internal.retry_count == 3
    assert again.request_token == env.request_token


def test_retry_encoding_is_pinned() -> None:
    env = Envelope(data=RequestData(id="a", deadline=10), internal=Internal(request_token="t"))
    assert encode_envelope(env.with_retry_count(1)) == (
        '{"internal":{"retry_count":1,"request_token":"t"},"request_kind":"plain",'
        '"data":{"id":"a","deadline":10}}'
    )


@pytest.mark.parametrize("kind", ["plain", "redis", "pubsub"])
def test_all_request_kinds_accepted(kind: str) -> None:
    member = GUIDE_MEMBER.replace('"plain"', f'"{kind}"')
    assert decode_envelope(member).request_kind == kind


def test_missing_internal_and_kind_mean_empty_and_plain() -> None:
    env = decode_envelope('{"data":{"id":"x","deadline":5.5}}')
    assert env.request_kind == "plain"
    assert env.data.deadline == 5.5
    assert env.result_route is None


def test_redis_kind_route_in_data_is_the_entry_route() -> None:
    member = '{"request_kind":"redis","data":{"id":"x","deadline":9,"result_queue_name":"mine"}}'
    assert decode_envelope(member).result_route == "mine"


@pytest.mark.parametrize(
    "member",
    [
        "not json",
        "[1, 2]",
        '{"internal":{}}',
        '{"data":{"deadline":5}}',
        '{"data":{"id":7,"deadline":5}}',
        '{"data":{"id":"","deadline":5}}',
    ],
)
def test_unreadable_entries_have_no_id(member: str) -> None:
    with pytest.raises(EntryError) as info:
        decode_envelope(member)
    assert not info.value.readable
    assert info.value.request_token == derive_request_token(member)
    assert isinstance(info.value, WireError)


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ('"deadline":0', "data.deadline"),
        ('"deadline":"soon"', "data.deadline"),
        ('"deadline":true', "data.deadline"),
        ('"deadline":5,"metadata":{"n":1}', "data.metadata"),
        ('"deadline":5,"headers":[]', "data.headers"),
        ('"deadline":5,"endpoint":3', "data.endpoint"),
    ],
)
def test_readable_bad_entries_carry_id_and_route(data: str, field: str) -> None:
    member = '{"internal":{"result_queue_name":"box"},"data":{"id":"r1",' + data + "}}"
    with pytest.raises(EntryError) as info:
        decode_envelope(member)
    err = info.value
    assert (err.entry_id, err.result_route, err.code) == ("r1", "box", ErrorCode.INVALID_REQUEST)
    assert err.readable and field in str(err)


def test_unknown_request_kind_is_readable_error() -> None:
    with pytest.raises(EntryError) as info:
        decode_envelope('{"request_kind":"grpc","data":{"id":"k","deadline":5}}')
    assert info.value.entry_id == "k" and "request_kind" in str(info.value)


def test_bad_internal_is_readable_error() -> None:
    with pytest.raises(EntryError) as info:
        decode_envelope('{"internal":{"retry_count":-1},"data":{"id":"k","deadline":5}}')
    assert info.value.entry_id == "k" and "retry_count" in str(info.value)


def test_pubsub_attributes_overwrite_metadata() -> None:
    body = '{"id":"p","deadline":9,"metadata":{"team":"body","x":"1"}}'
    data = decode_request_data(body, attributes={"team": "attr"})
    assert data.metadata == {"team": "attr", "x": "1"}


def test_full_envelope_encoding_order_is_pinned() -> None:
    env = Envelope(
        request_kind="redis",
        internal=Internal(
            retry_count=2,
            queue_id="q",
            request_token="t",
            request_queue_name="rq",
            result_queue_name="res",
            transport_correlation_id="m1",
            labels={"tier": "async", "classification": "reserved"},
            result_ttl_seconds=60,
            result_routing_resolved=True,
            enqueued_at_ms=1,
        ),
        data=RequestData(
            id="i",
            created=1,
            deadline=2.5,
            payload={"a": "é"},
            metadata={"m": "1"},
            headers={"h": "v"},
            endpoint="/v1/chat/completions",
        ),
    )
    text = encode_envelope(env)
    assert text == (
        '{"internal":{"retry_count":2,"queue_id":"q","request_token":"t",'
        '"request_queue_name":"rq","result_queue_name":"res","transport_correlation_id":"m1",'
        '"labels":{"tier":"async","classification":"reserved"},"result_ttl_seconds":60,'
        '"result_routing_resolved":true,"enqueued_at_ms":1},"request_kind":"redis",'
        '"data":{"id":"i","created":1,"deadline":2.5,"payload":{"a":"é"},"metadata":{"m":"1"},'
        '"headers":{"h":"v"},"endpoint":"/v1/chat/completions"}}'
    )
    assert decode_envelope(text) == env


def test_internal_must_be_an_object() -> None:
    with pytest.raises(EntryError) as info:
        decode_envelope('{"internal":[],"data":{"id":"k","deadline":5}}')
    assert info.value.entry_id == "k"
    assert str(info.value) == "internal must be an object"


def test_non_finite_deadline_is_readable_error() -> None:
    with pytest.raises(EntryError, match="finite") as info:
        decode_envelope('{"data":{"id":"n","deadline":Infinity}}')
    assert info.value.readable


# -- property: any envelope encodes to JSON that decodes back to the same envelope --------
text = st.text(max_size=12)
str_map = st.dictionaries(text, text, max_size=3)
header_map = st.dictionaries(  # names HTTP accepts (RFC 9110 tokens), values without CTLs
    st.from_regex(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,12}", fullmatch=True),
    st.text(st.characters(blacklist_categories=("Cc", "Cs")), max_size=12),
    max_size=3,
)
number = st.one_of(
    st.integers(min_value=1, max_value=2**40),
    st.floats(min_value=0.001, max_value=2e9, allow_nan=False, allow_infinity=False),
)
json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)

internals = st.builds(
    Internal,
    retry_count=st.integers(min_value=0, max_value=50),
    queue_id=text,
    request_token=text,
    request_queue_name=text,
    result_queue_name=text,
    transport_correlation_id=text,
    labels=str_map,
    result_ttl_seconds=st.none() | st.integers(min_value=0, max_value=10**6),
    result_routing_resolved=st.booleans(),
    enqueued_at_ms=st.none() | st.integers(min_value=0, max_value=2**45),
)
requests = st.builds(
    RequestData,
    id=text.filter(bool),
    deadline=number,
    created=st.none() | number,
    payload=json_value,
    metadata=str_map,
    headers=header_map,
    endpoint=text,
    request_queue_name=text,
    result_queue_name=text,
    pubsub_id=text,
)
envelopes = st.builds(
    Envelope, data=requests, internal=internals, request_kind=st.sampled_from(["plain", "redis"])
)


@settings(max_examples=100, deadline=None)
@given(envelopes)
def test_encode_decode_round_trip(env: Envelope) -> None:
    member = encode_envelope(env)
    again = decode_envelope(member)
    assert again == env
    assert encode_envelope(again) == member


# -- property: the fast path for well-formed entries decodes as the checked path does -------
# Any JSON value, a number of each kind, or a usual value, in any field of either block.
odd_value = st.one_of(
    json_value,
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-3, max_value=3),
    st.sampled_from([None, True, "", "x", 1.0, 1.5, {}, {"k": "v"}, {"k": 1}, []]),
)
data_keys = st.sampled_from(
    ["id", "deadline", "created", "payload", "metadata", "headers", "endpoint",
     "request_queue_name", "result_queue_name", "pubsub_id", "other"]
)  # fmt: skip
internal_keys = st.sampled_from(
    ["retry_count", "queue_id", "request_token", "request_queue_name", "result_queue_name",
     "transport_correlation_id", "labels", "result_ttl_seconds", "result_routing_resolved",
     "enqueued_at_ms", "other"]
)  # fmt: skip


def _outcome(decode: object, top: dict[str, object], token: str) -> object:
    try:
        env = decode(top, token)  # type: ignore[operator]
    except EntryError as exc:
        return ("error", str(exc), exc.entry_id, exc.result_route, exc.request_token)
    return env if env is None else ("ok", env, env.source_token)


@settings(max_examples=300, deadline=None)
@given(
    envelopes,
    st.dictionaries(data_keys, odd_value, max_size=3),
    st.dictionaries(internal_keys, odd_value, max_size=3),
    st.sampled_from([None, "plain", "redis", "grpc", "", 0]),
)
def test_fast_path_agrees_with_checked_path(
    env: Envelope, data_changes: dict[str, object], internal_changes: dict[str, object],
    kind: object,
) -> None:  # fmt: skip
    from sluiceway.wire.envelope import _checked_envelope, _usual_envelope

    top = json.loads(encode_envelope(env))
    top["data"].update(data_changes)
    top.setdefault("internal", {}).update(internal_changes)
    top["request_kind"] = kind
    token = "t" * 32
    fast = _outcome(_usual_envelope, top, token)
    checked = _outcome(_checked_envelope, top, token)
    assert fast is None or fast == checked
