"""A streaming ``multipart/form-data`` reader (pure): bytes in as they arrive, parts out as
events, so an upload goes to disk chunk by chunk and is never held whole.

Events: :class:`PartStart` (the part's field name and file name), :class:`PartData` (a piece
of its body), and the end of the body from :meth:`MultipartParser.close`. Only what the batch
API needs: no nested multipart, header lines of at most ``MAX_HEADER_BYTES`` in all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from email.message import Message
from typing import Final

__all__ = [
    "MAX_HEADER_BYTES",
    "MultipartError",
    "MultipartParser",
    "PartData",
    "PartStart",
    "boundary_of",
]

MAX_HEADER_BYTES: Final = 16 * 1024
_BOUNDARY: Final = re.compile(r"^[ -~]{1,70}$")


class MultipartError(ValueError):
    """A body that is not the multipart it claims to be."""


@dataclass(frozen=True, slots=True)
class PartStart:
    name: str
    filename: str | None


@dataclass(frozen=True, slots=True)
class PartData:
    data: bytes


Event = PartStart | PartData


def boundary_of(content_type: str | None) -> bytes:
    """The boundary of a ``multipart/form-data`` content type; MultipartError otherwise."""
    msg = Message()
    msg["content-type"] = content_type or ""
    if msg.get_content_type() != "multipart/form-data":
        raise MultipartError("the body must be multipart/form-data")
    boundary = msg.get_param("boundary")
    if not isinstance(boundary, str) or not _BOUNDARY.match(boundary):
        raise MultipartError("multipart/form-data needs a boundary")
    return boundary.encode()


def _part_start(head: bytes) -> PartStart:
    msg = Message()
    for line in head.decode("utf-8", "replace").split("\r\n"):
        name, sep, value = line.partition(":")
        if not sep:
            raise MultipartError(f"bad part header {line!r}")
        msg[name.strip()] = value.strip()
    disposition = msg.get("content-disposition")
    if disposition is None:
        raise MultipartError("a part needs a content-disposition")
    holder = Message()
    holder["content-disposition"] = disposition
    field = holder.get_param("name", header="content-disposition")
    filename = holder.get_param("filename", header="content-disposition")
    if not isinstance(field, str):
        raise MultipartError("a part needs a name")
    return PartStart(field, filename if isinstance(filename, str) else None)


class MultipartParser:
    """Feed the body's chunks in order; each :meth:`feed` returns the events they complete."""

    def __init__(self, boundary: bytes) -> None:
        self._first = b"--" + boundary
        self._delimiter = b"\r\n--" + boundary
        self._buffer = b""
        self._state = "preamble"  # preamble -> after -> headers -> body -> after ... -> done

    def feed(self, chunk: bytes) -> list[Event]:
        self._buffer += chunk
        events: list[Event] = []
        while self._step(events):
            pass
        return events

    def close(self) -> None:
        """The body ended: it must have ended with the closing delimiter."""
        if self._state != "done":
            raise MultipartError("the multipart body ended early")

    def _step(self, events: list[Event]) -> bool:
        """Advance one state if the buffer allows; False when more bytes are needed."""
        if self._state == "done":
            self._buffer = b""  # epilogue: ignored
            return False
        step = {
            "preamble": self._preamble,
            "after": self._after,
            "headers": self._headers,
            "body": self._body,
        }[self._state]
        return step(events)

    def _preamble(self, events: list[Event]) -> bool:
        buf = self._buffer
        at = buf.find(self._first)
        if at < 0:
            self._buffer = buf[-len(self._first) :]
            return False
        self._buffer, self._state = buf[at + len(self._first) :], "after"
        return True

    def _after(self, events: list[Event]) -> bool:
        buf = self._buffer
        if len(buf) < 2:
            return False
        if buf[:2] == b"--":
            self._buffer, self._state = b"", "done"
            return False
        if buf[:2] != b"\r\n":
            raise MultipartError("malformed multipart delimiter")
        self._buffer, self._state = buf[2:], "headers"
        return True

    def _headers(self, events: list[Event]) -> bool:
        buf = self._buffer
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            if len(buf) > MAX_HEADER_BYTES:
                raise MultipartError("multipart part headers too large")
            return False
        events.append(_part_start(buf[:end]))
        self._buffer, self._state = buf[end + 4 :], "body"
        return True

    def _body(self, events: list[Event]) -> bool:
        buf = self._buffer
        at = buf.find(self._delimiter)
        if at < 0:
            keep = len(self._delimiter) - 1
            if len(buf) > keep:
                events.append(PartData(buf[:-keep]))
                self._buffer = buf[-keep:]
            return False
        if at:
            events.append(PartData(buf[:at]))
        self._buffer, self._state = buf[at + len(self._delimiter) :], "after"
        return True
