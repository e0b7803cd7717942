"""The raw queue member before it is an envelope: its bytes, its request token, and the limits
an entry must keep before and after it is decoded (standard library only).

A hostile member must fail as an :class:`~sluiceway.wire.envelope.EntryError` with a reason,
never as an exception that stops a poll loop (issue 26): JSON nested deeper than
:data:`MAX_NESTING` (the decoder recurses per level: 50,000 levels raise ``RecursionError``),
bytes that are not UTF-8 (Redis holds any bytes; the Redis client hands them over as lone
surrogates), ``\\uD800``-style escapes that decode to a lone surrogate (nothing can encode the
result again), and caller headers that HTTP cannot carry (a CR/LF in a value would inject a
header; the HTTP client refuses it on every attempt).
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from collections.abc import Mapping
from typing import Final

__all__ = [
    "MAX_NESTING",
    "derive_request_token",
    "header_problem",
    "member_bytes",
    "member_problem",
    "mint_request_token",
]

# Deeper than any request body we have seen, far below the decoder's recursion limit.
MAX_NESTING: Final = 200

_STRING: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NON_BRACKET: Final = re.compile(r"[^\[\]{}]+")
_INNERMOST: Final = re.compile(r"\[\]|\{\}")
_OPENERS_RUN: Final = re.compile(rf"[\[{{]{{{MAX_NESTING + 1}}}")
_LONE_SURROGATE: Final = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)
# RFC 9110 token: the characters a field name may hold.
_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# Control characters a field value may not hold (HTAB is allowed).
_CTL: Final = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def member_bytes(member: str | bytes) -> bytes:
    """The member's raw bytes: a string with surrogate-escaped bytes (a Redis member that is
    not UTF-8) gives back exactly the bytes Redis holds."""
    if isinstance(member, bytes):
        return member
    return member.encode("utf-8", "surrogateescape")


def derive_request_token(member: str | bytes) -> str:
    """First 32 hex digits of the SHA-256 of the raw member (docs/design-rules.md rule 13)."""
    return hashlib.sha256(member_bytes(member)).hexdigest()[:32]


def mint_request_token() -> str:
    """A fresh random token (16 bytes as hex), as upstream producers mint per submission."""
    return secrets.token_hex(16)


def _deeper_than(text: str, limit: int) -> bool:
    """Whether a JSON text nests brackets deeper than ``limit`` (string contents left out).

    Each pass removes the innermost pairs, so a usual body costs a few passes in C and a
    hostile one at most ``limit`` passes; nothing recurses."""
    brackets = _NON_BRACKET.sub("", _STRING.sub("", text))
    if _OPENERS_RUN.search(brackets):  # the usual attack: one long run of openers
        return True
    for _ in range(limit):
        brackets, removed = _INNERMOST.subn("", brackets)
        if not brackets or not removed:
            return False
    return bool(brackets)


def _too_deep(text: str) -> bool:
    opened = text.count("[") + text.count("{")
    return opened > MAX_NESTING and _deeper_than(text, MAX_NESTING)


def _lone_surrogate(text: str) -> bool:
    """Whether the JSON text decodes to a string holding a lone surrogate (only parsed when a
    surrogate escape is there: an escaped backslash before ``u`` looks the same to a regex)."""
    if "\\u" not in text or not _LONE_SURROGATE.search(text):
        return False
    try:
        json.dumps(json.loads(text), ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    except ValueError:  # not JSON: decoding says so
        return False
    return False


def member_problem(member: str | bytes) -> str | None:
    """Why ``member`` must not be decoded (then it is moved aside), or None."""
    try:
        text = member.decode("utf-8") if isinstance(member, bytes) else member
        text.encode("utf-8")
    except UnicodeError:
        return "not UTF-8"
    if _too_deep(text):
        return f"JSON nested deeper than {MAX_NESTING} levels"
    if _lone_surrogate(text):
        return "a \\u escape decodes to a lone UTF-16 surrogate"
    return None


def header_problem(headers: Mapping[str, str]) -> str | None:
    """Why a caller header cannot be sent over HTTP, naming it, or None."""
    for name, value in headers.items():
        if not _TOKEN.fullmatch(name):
            return f"data.headers: {name!r} is not a valid header name"
        if _CTL.search(value):
            return f"data.headers.{name}: value holds a control character (CR, LF, NUL)"
    return None
