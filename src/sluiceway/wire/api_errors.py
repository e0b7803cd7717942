"""The OpenAI error envelope every sluiceway HTTP server answers errors in.

``{"error": {"message": ..., "type": ..., "code": ...}}``: the shape the official ``openai``
client parses into its exception's ``message`` and ``code``.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["error_body", "error_document"]


def error_document(message: str, *, type: str, code: str | int | None = None) -> dict[str, Any]:
    """The envelope as a JSON-ready mapping."""
    return {"error": {"message": message, "type": type, "code": code}}


def error_body(message: str, *, type: str, code: str | int | None = None) -> bytes:
    """The envelope as compact UTF-8 JSON."""
    doc = error_document(message, type=type, code=code)
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()
