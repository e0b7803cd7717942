"""The ``x-request-id`` every answer of the router and the coordinator carries (pure).

A caller's id is kept when it is 1 to ``MAX_REQUEST_ID`` (256) visible ASCII characters
(``!`` to ``~``: no spaces, no control characters); any other value, and a missing one, is
replaced by a fresh UUID4. Kept, not refused: the id is for following a request through logs
and hops, and a request must not fail over its tracing header. Bounded and visible-only, so an
echoed or logged id cannot bloat a log line or break its format. 256, not the coordinator's
128: the processor forwards ``<tenant>:<request id>`` (the queue entry's id), which a 128-character
request id and its tenant exceed, and the simulator's failure injection counts attempts by it.

The coordinator's mailbox ids are stricter (``^[a-zA-Z0-9-]{1,128}$``, 400 otherwise): there
the id names a result list, not only a log line.
"""

from __future__ import annotations

import uuid
from typing import Final

__all__ = ["MAX_REQUEST_ID", "echoable", "new_request_id", "request_id_for"]

MAX_REQUEST_ID: Final = 256
_FIRST, _LAST = 0x21, 0x7E


def echoable(value: str | None) -> bool:
    """Whether a caller's ``x-request-id`` is kept (forwarded and echoed) as it is."""
    if not value or len(value) > MAX_REQUEST_ID:
        return False
    return all(_FIRST <= ord(ch) <= _LAST for ch in value)


def new_request_id() -> str:
    """A fresh id: a UUID4 in its usual 36-character form (it also passes the mailbox rule)."""
    return str(uuid.uuid4())


def request_id_for(value: str | None) -> tuple[str, bool]:
    """The id a request goes by, and whether it is the caller's own."""
    if echoable(value):
        assert value is not None
        return value, True
    return new_request_id(), False
