"""Take a batch's still-queued lines out of their queue, each answered with a result record.

A cancel (and the window's end) must stop lines that have not started and let running ones
finish. The broker protocol already has the step that does exactly that for one entry, with
the processor's own fencing: :meth:`~sluiceway.broker.base.Broker.claim_many` takes pending
entries (an entry a processor already claimed is not pending, so it runs on), and
:meth:`~sluiceway.broker.base.Broker.ack` pushes one result to the batch's result list and
drops the claim and the request's markers in one step. The result is collected like any other,
so each line is written once whichever side answers it.
"""

from __future__ import annotations

import secrets
from typing import Final

from sluiceway.broker.base import Broker, ClaimAsk, Entry, ResultWrite
from sluiceway.errors import WireError
from sluiceway.wire import ErrorCode, ResultRecord, decode_envelope

__all__ = ["PAGE", "withdraw_queued"]

PAGE: Final = 500


def _ask(entry: Entry, prefix: str, owner: str, lease_until: float) -> ClaimAsk | None:
    if prefix not in entry.member:  # cheap test before decoding
        return None
    try:
        envelope = decode_envelope(entry.member)
    except WireError:
        return None
    if not envelope.id.startswith(prefix):
        return None
    return ClaimAsk(entry, envelope.id, envelope.request_token, owner, lease_until)


async def withdraw_queued(
    broker: Broker,
    queue: str,
    *,
    id_prefix: str,
    destination: str,
    code: ErrorCode,
    now: float,
    result_ttl: float,
) -> int:
    """Answer every pending entry of ``queue`` whose id starts with ``id_prefix`` with a
    ``code`` result in ``destination`` (TTL ``result_ttl`` wall seconds); how many."""
    owner = secrets.token_hex(8)
    offset = taken = 0
    while page := await broker.peek(queue, PAGE, offset=offset):
        asks = [a for e in page if (a := _ask(e, id_prefix, owner, now + 60.0)) is not None]
        won = 0
        for ask, outcome in zip(asks, await broker.claim_many(asks), strict=True):
            if outcome.claim is None:
                continue
            record = ResultRecord.error(ask.request_id, code, request_token=ask.request_token)
            write = ResultWrite(
                destination, record.encode(), ask.request_id, ask.request_token, result_ttl
            )
            won += int(await broker.ack(outcome.claim, write))
        taken += won
        offset += len(page) - won
    return taken
