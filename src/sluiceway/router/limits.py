"""How much one request may send the router: its body and its headers.

Without limits a 50 MB body is read into memory and forwarded, and a caller can send 10,000
headers or a 1 MB header that every model server behind the router then parses too. The
defaults match the coordinator's ``--max-body-bytes`` (10 MiB) and common proxies' header
limits. The header check and the declared-length check are pure; :func:`read_body` counts the
body as it arrives, so a chunked body without ``Content-Length`` is stopped at the limit too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any, Final

from sluiceway.errors import ConfigError

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_HEADERS",
    "DEFAULT_MAX_HEADERS_TOTAL_BYTES",
    "DEFAULT_MAX_HEADER_BYTES",
    "BodyTooLarge",
    "RequestLimits",
    "read_body",
]

DEFAULT_MAX_BODY_BYTES: Final = 10 * 1024 * 1024
DEFAULT_MAX_HEADERS: Final = 100
DEFAULT_MAX_HEADER_BYTES: Final = 16 * 1024
DEFAULT_MAX_HEADERS_TOTAL_BYTES: Final = 64 * 1024

_FLAGS: Final = {
    "body_bytes": "--max-body-bytes",
    "headers": "--max-headers",
    "header_bytes": "--max-header-bytes",
    "headers_total_bytes": "--max-headers-total-bytes",
}

RawHeaders = Iterable[tuple[bytes, bytes]]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]


class BodyTooLarge(Exception):
    """The body is over the limit (declared or counted)."""


@dataclass(frozen=True, slots=True)
class RequestLimits:
    """``body_bytes``: the largest body (413 above); ``headers``: the most header fields;
    ``header_bytes``: the longest field, name plus value; ``headers_total_bytes``: all fields
    together (431 above any of the three)."""

    body_bytes: int = DEFAULT_MAX_BODY_BYTES
    headers: int = DEFAULT_MAX_HEADERS
    header_bytes: int = DEFAULT_MAX_HEADER_BYTES
    headers_total_bytes: int = DEFAULT_MAX_HEADERS_TOTAL_BYTES

    def __post_init__(self) -> None:
        for name, flag in _FLAGS.items():
            if getattr(self, name) < 1:
                raise ConfigError("must be >= 1", field=flag)

    def header_problem(self, raw: RawHeaders) -> str | None:
        """Why ``raw`` is over a header limit (the 431 message), or None."""
        count = total = 0
        for name, value in raw:
            size = len(name) + len(value)
            if size > self.header_bytes:
                return f"a header field is over {self.header_bytes} bytes"
            count += 1
            total += size
        if count > self.headers:
            return f"more than {self.headers} header fields"
        if total > self.headers_total_bytes:
            return f"header fields over {self.headers_total_bytes} bytes in total"
        return None

    def declared_too_large(self, raw: RawHeaders) -> bool:
        """Whether ``Content-Length`` already says the body is over the limit."""
        for name, value in raw:
            if name == b"content-length":
                return value.isdigit() and int(value) > self.body_bytes
        return False


async def read_body(receive: Receive, limit: int) -> bytes:
    """The whole body; BodyTooLarge once more than ``limit`` bytes arrived (the rest is not
    read), ConnectionResetError when the client left."""
    chunks: list[bytes] = []
    size = 0
    while True:
        msg = await receive()
        if msg["type"] == "http.disconnect":
            raise ConnectionResetError("client went away while sending the body")
        chunk = msg.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(size)
        chunks.append(chunk)
        if not msg.get("more_body", False):
            return b"".join(chunks)
