"""Property: any envelope encodes to JSON that decodes back to the same envelope."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sluiceway.wire import Envelope, Internal, RequestData, decode_envelope, encode_envelope

text = st.text(max_size=12)
str_map = st.dictionaries(text, text, max_size=3)
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
    headers=str_map,
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
