"""Pub/Sub messages as queue entries (pure): names, the envelope a message becomes, retry counts.

A Pub/Sub request message carries the plain request object (``id``, ``deadline``, ``payload``,
``metadata``, ...) as its body; its attributes merge into ``metadata`` (an attribute wins over
a body key of the same name). The processor reads queue entries as envelopes, so each message
is wrapped in one whose ``internal`` part says where it came from:

- ``request_token``: the attribute ``sluiceway-request-token`` when a producer set one, else the
  first 32 hex digits of the SHA-256 of the message id, which every redelivery of the message
  shares, so a repeated result carries the token of the first;
- ``retry_count``: the subscription's delivery attempt minus one when it reports attempts (it
  does with a dead-letter policy), else the retries this process scheduled for the message;
- ``transport_correlation_id``: the message id (upstream's field).

This module imports only the standard library.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "TOKEN_ATTRIBUTE",
    "Received",
    "message_member",
    "message_score",
    "retry_count_of",
    "subscription_path",
    "token_for",
    "topic_path",
]

TOKEN_ATTRIBUTE = "sluiceway-request-token"


@dataclass(frozen=True, slots=True)
class Received:
    """One pulled message. ``delivery_attempt`` is 0 when the subscription does not count
    attempts (no dead-letter policy); ``publish_time`` is Unix seconds."""

    ack_id: str
    message_id: str
    data: bytes
    attributes: Mapping[str, str]
    delivery_attempt: int = 0
    publish_time: float = 0.0


def _resource(project: str, kind: str, name: str) -> str:
    return name if name.startswith("projects/") else f"projects/{project}/{kind}/{name}"


def subscription_path(project: str, name: str) -> str:
    """A subscription's full name: ``name`` as given when it is one, else in ``project``."""
    return _resource(project, "subscriptions", name)


def topic_path(project: str, name: str) -> str:
    """A topic's full name: ``name`` as given when it is one, else in ``project``."""
    return _resource(project, "topics", name)


def token_for(message: Received) -> str:
    """The request token of a message (see the module docstring)."""
    given = message.attributes.get(TOKEN_ATTRIBUTE, "")
    if given:
        return given
    return hashlib.sha256(message.message_id.encode()).hexdigest()[:32]


def retry_count_of(message: Received, scheduled: int) -> int:
    """Retries before this delivery: from the delivery attempt when the subscription counts
    them, else ``scheduled`` (retries this process asked for by delaying the message)."""
    if message.delivery_attempt > 0:
        return max(scheduled, message.delivery_attempt - 1)
    return scheduled


def _body(data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return data.decode("utf-8", errors="replace")  # kept as text: the entry is unreadable


def _merged(body: Any, attributes: Mapping[str, str]) -> Any:
    extra = {k: v for k, v in attributes.items() if k != TOKEN_ATTRIBUTE}
    if not isinstance(body, dict) or not extra:
        return body
    metadata = body.get("metadata")
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        return body  # a bad metadata field is the request's own error to report
    return {**body, "metadata": {**metadata, **extra}}


def message_member(message: Received, *, queue: str, retry_count: int) -> str:
    """The envelope JSON a message is read as. A body that is not a JSON object with an ``id``
    makes an envelope the processor cannot read, which it moves aside (acked and counted)."""
    internal = {
        "retry_count": retry_count,
        "request_token": token_for(message),
        "request_queue_name": queue,
        "transport_correlation_id": message.message_id,
    }
    data = _merged(_body(message.data), message.attributes)
    return json.dumps({"internal": internal, "request_kind": "pubsub", "data": data})


def message_score(member: str) -> float:
    """The entry's score: its deadline (Unix seconds), or 0 when it has none."""
    data = json.loads(member).get("data")
    deadline = data.get("deadline") if isinstance(data, dict) else None
    if isinstance(deadline, int | float) and not isinstance(deadline, bool):
        return float(deadline)
    return 0.0
