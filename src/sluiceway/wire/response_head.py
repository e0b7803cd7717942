"""Headers added to a response head on raw ASGI, whoever sends it.

A server's answers leave from many places (its own errors, drops, relayed streams); wrapping
``send`` once stamps a header on all of them, including answers written later. Standard library
only: the router and the coordinator both use it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

__all__ = ["stamp_head"]

Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


def stamp_head(send: Send, headers: Sequence[tuple[str, str]], *, replace: bool) -> Send:
    """``send`` with ``headers`` (lower-case names) added to ``http.response.start``.

    ``replace``: any header of the same name already in the head is dropped first, so the
    head carries exactly the given value; otherwise a header already present is kept and the
    given one is not added."""
    extra = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]
    names = {name for name, _ in extra}

    async def stamped(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            head = list(message.get("headers") or ())
            present = {bytes(name).lower() for name, _ in head}
            if replace:
                head = [(n, v) for n, v in head if bytes(n).lower() not in names]
                head.extend(extra)
            else:
                head.extend((n, v) for n, v in extra if n not in present)
            message = {**message, "headers": head}
        await send(message)

    return stamped
