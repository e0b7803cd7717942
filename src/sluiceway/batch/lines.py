"""One line of a batch input file, checked as it is read (pure).

A batch input file is JSONL: each line an object ``{"custom_id", "method", "url", "body"}``.
Lines are checked one at a time while the upload streams to disk, so an error names its line
(1-based, as OpenAI counts) and nothing holds the whole file. The body is held to the same
rules as a queued request of the coordinator (``check_body``, injected so this module stays
pure); the model and ``stream`` are checked here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "MAX_CUSTOM_ID",
    "MAX_LINES",
    "SUPPORTED_URLS",
    "BatchLine",
    "BodyCheck",
    "LineError",
    "LineValidator",
    "parse_line",
]

SUPPORTED_URLS: Final = ("/v1/chat/completions", "/v1/completions", "/v1/embeddings")
MAX_LINES: Final = 50_000  # OpenAI's limit per batch
MAX_CUSTOM_ID: Final = 512
# (body, url) -> an error message naming the field, or None when the body is fine.
BodyCheck = Callable[[dict[str, Any], str], "str | None"]


class LineError(ValueError):
    """A line that cannot be queued; ``line`` is 1-based, ``param`` the offending field."""

    def __init__(self, line: int, message: str, *, param: str | None = None) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.detail = message
        self.param = param


@dataclass(frozen=True, slots=True)
class BatchLine:
    """A checked line: its number (1-based), custom id, url and request body."""

    number: int
    custom_id: str
    url: str
    body: dict[str, Any]

    @property
    def model(self) -> str:
        return str(self.body["model"])


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _decoded(raw: bytes, number: int) -> Any:
    try:
        doc = json.loads(raw, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise LineError(number, f"not valid JSON: {exc}") from None
    if isinstance(doc, float) and not math.isfinite(doc):
        raise LineError(number, "not valid JSON")
    return doc


def _field(doc: dict[str, Any], name: str, number: int) -> str:
    value = doc.get(name)
    if not isinstance(value, str) or not value:
        raise LineError(number, f"{name} must be a non-empty string", param=name)
    return value


def parse_line(raw: bytes, number: int, *, check_body: BodyCheck | None = None) -> BatchLine:
    """The line ``raw`` (its number ``number``) as a :class:`BatchLine`, or :class:`LineError`."""
    doc = _decoded(raw, number)
    if not isinstance(doc, dict):
        raise LineError(number, "a line must be a JSON object")
    custom_id = _field(doc, "custom_id", number)
    if len(custom_id) > MAX_CUSTOM_ID:
        raise LineError(number, f"custom_id longer than {MAX_CUSTOM_ID}", param="custom_id")
    if _field(doc, "method", number) != "POST":
        raise LineError(number, "method must be POST", param="method")
    url = _field(doc, "url", number)
    if url not in SUPPORTED_URLS:
        raise LineError(number, f"url must be one of {', '.join(SUPPORTED_URLS)}", param="url")
    body = doc.get("body")
    if not isinstance(body, dict):
        raise LineError(number, "body must be a JSON object", param="body")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise LineError(number, "body.model must be a non-empty string", param="body.model")
    if body.get("stream") is True:
        raise LineError(number, "body.stream is not supported in a batch", param="body.stream")
    if check_body is not None and (problem := check_body(body, url)) is not None:
        raise LineError(number, problem, param="body")
    return BatchLine(number, custom_id, url, body)


class LineValidator:
    """Checks the lines of one file in order: each valid, custom ids unique, at most
    ``max_lines``; remembers the urls and models seen (a batch's endpoint must match)."""

    def __init__(self, *, check_body: BodyCheck | None = None, max_lines: int = MAX_LINES) -> None:
        self._check = check_body
        self._max = max_lines
        self._ids: set[str] = set()
        self.number = 0  # lines read, blank ones included
        self.count = 0  # request lines
        self.urls: set[str] = set()
        self.models: set[str] = set()

    def feed(self, raw: bytes) -> BatchLine | None:
        """Check the next line; None for a blank one (skipped, as OpenAI does)."""
        self.number += 1
        if not raw.strip():
            return None
        line = parse_line(raw, self.number, check_body=self._check)
        if line.custom_id in self._ids:
            raise LineError(
                self.number, f"duplicate custom_id {line.custom_id!r}", param="custom_id"
            )
        self.count += 1
        if self.count > self._max:
            raise LineError(self.number, f"more than {self._max} requests in one file")
        self._ids.add(line.custom_id)
        self.urls.add(line.url)
        self.models.add(line.model)
        return line

    def finish(self) -> None:
        """The end of the file: at least one request."""
        if self.count == 0:
            raise LineError(max(self.number, 1), "the file holds no request")
