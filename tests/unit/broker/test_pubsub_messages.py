"""Pub/Sub messages as envelopes: names, tokens, merged attributes, retry counts, scores."""

from __future__ import annotations

import json

import pytest

from sluiceway.broker.pubsub_messages import (
    TOKEN_ATTRIBUTE,
    Received,
    message_member,
    message_score,
    retry_count_of,
    subscription_path,
    token_for,
    topic_path,
)
from sluiceway.wire import EntryError, decode_envelope


def received(data: bytes, attributes: dict[str, str] | None = None, attempt: int = 0) -> Received:
    return Received("ack-1", "m-1", data, attributes or {}, attempt)


def test_short_names_take_the_project_and_full_names_stay() -> None:
    assert subscription_path("p", "s") == "projects/p/subscriptions/s"
    assert topic_path("p", "t") == "projects/p/topics/t"
    assert topic_path("p", "projects/q/topics/t") == "projects/q/topics/t"


def test_attributes_win_over_body_metadata_and_the_token_attribute_is_not_metadata() -> None:
    body = {"id": "r", "deadline": 10, "metadata": {"team": "body", "keep": "1"}}
    message = received(json.dumps(body).encode(), {"team": "attr", TOKEN_ATTRIBUTE: "t" * 32})
    envelope = decode_envelope(message_member(message, queue="q", retry_count=2))
    assert dict(envelope.data.metadata) == {"team": "attr", "keep": "1"}
    assert envelope.request_token == "t" * 32
    assert envelope.internal.retry_count == 2
    assert envelope.internal.request_queue_name == "q"
    assert envelope.internal.transport_correlation_id == "m-1"


def test_the_token_follows_the_message_id_across_deliveries() -> None:
    first = received(b"{}")
    again = Received("ack-2", "m-1", b"{}", {}, 3)
    assert token_for(first) == token_for(again)
    assert len(token_for(first)) == 32
    assert token_for(Received("ack-3", "m-2", b"{}", {})) != token_for(first)


def test_retry_count_prefers_the_delivery_attempt_when_counted() -> None:
    assert retry_count_of(received(b"", attempt=0), scheduled=2) == 2
    assert retry_count_of(received(b"", attempt=4), scheduled=0) == 3
    assert retry_count_of(received(b"", attempt=1), scheduled=2) == 2


@pytest.mark.parametrize("data", [b"not json", b'{"no": "id"}', b"[1, 2]", b"\xff\xfe"])
def test_bodies_without_an_id_make_unreadable_envelopes(data: bytes) -> None:
    member = message_member(received(data), queue="q", retry_count=0)
    with pytest.raises(EntryError) as caught:
        decode_envelope(member)
    assert not caught.value.readable
    assert message_score(member) == 0.0


def test_a_bad_field_with_a_readable_id_is_a_readable_error() -> None:
    body = json.dumps({"id": "r", "deadline": -1}).encode()
    with pytest.raises(EntryError) as caught:
        decode_envelope(message_member(received(body), queue="q", retry_count=0))
    assert caught.value.readable and caught.value.entry_id == "r"


def test_the_score_is_the_deadline() -> None:
    member = message_member(received(b'{"id": "r", "deadline": 12.5}'), queue="q", retry_count=0)
    assert message_score(member) == 12.5
