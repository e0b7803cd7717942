"""Contracts with the outside world (docs/design-rules.md rule 30), standard library only.

- :class:`Envelope` / :func:`decode_envelope` / :func:`encode_envelope`: the queue entry;
  :class:`EntryError` (a :class:`~sluiceway.errors.WireError`) tells readable bad entries (id
  known: write an INVALID_REQUEST result) from unreadable ones (move to ``<queue>:invalid``).
- :class:`ResultRecord` (``ok``, ``error``, ``too_many_requests``) / :func:`decode_result`.
- :class:`ErrorCode`; :mod:`~sluiceway.wire.headers` (header names, dropped reasons);
  :class:`Lane`, :data:`LANES`, :func:`lane_for`.

Files: ``envelope`` (the queue entry, in llm-d-async's format), ``member`` (the raw member:
its bytes, its request token, the limits a hostile entry breaks), ``result`` (the result record
pushed to a result list), ``codes`` (result error codes and their default messages), ``headers``
(HTTP header names and values other systems read), ``lanes`` (the six strict lanes of the
tier-priority merge), ``api_errors`` (the OpenAI error envelope every sluiceway HTTP server
answers errors in), ``answer`` (the one shape of an HTTP answer sluiceway makes itself, and
sending it on raw ASGI), ``request_ids`` (which ``x-request-id`` a request goes by: the
caller's, or a fresh one), ``response_head`` (headers stamped on every response head a server
sends, on raw ASGI), ``response_watch`` (what went out on a raw ASGI ``send``: the head and
the first body byte's time).
"""

from __future__ import annotations

from sluiceway.wire import headers
from sluiceway.wire.codes import DEFAULT_MESSAGES, ErrorCode
from sluiceway.wire.envelope import (
    REQUEST_KINDS,
    EntryError,
    Envelope,
    Internal,
    RequestData,
    decode_envelope,
    decode_request_data,
    derive_request_token,
    encode_envelope,
    mint_request_token,
    request_data_obj,
)
from sluiceway.wire.lanes import LANE_KEYS, LANES, TIERS, Lane, lane_by_key, lane_for
from sluiceway.wire.result import (
    TOO_MANY_REQUESTS_PAYLOAD,
    ResultRecord,
    decode_result,
    encode_result,
    error_payload,
)

__all__ = [
    "DEFAULT_MESSAGES",
    "LANES",
    "LANE_KEYS",
    "REQUEST_KINDS",
    "TIERS",
    "TOO_MANY_REQUESTS_PAYLOAD",
    "EntryError",
    "Envelope",
    "ErrorCode",
    "Internal",
    "Lane",
    "RequestData",
    "ResultRecord",
    "decode_envelope",
    "decode_request_data",
    "decode_result",
    "derive_request_token",
    "encode_envelope",
    "encode_result",
    "error_payload",
    "headers",
    "lane_by_key",
    "lane_for",
    "mint_request_token",
    "request_data_obj",
]
