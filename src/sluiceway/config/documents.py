"""Reading configuration files: JSON or YAML, one document or several (``---``).

A document may nest at most :data:`MAX_NESTING` levels of mappings and lists (a config file
needs about ten). Deeper input is a ConfigError naming the file, not a RecursionError from the
parser: YAML is bounded while it is composed, JSON after it is parsed. The request bodies the
coordinator reads are held to the same limit (:func:`nests_deeper`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import yaml

from sluiceway.errors import ConfigError

__all__ = [
    "MAX_NESTING",
    "nests_deeper",
    "parse_documents",
    "read_document",
    "read_documents",
]

MAX_NESTING: Final = 64


def nests_deeper(value: Any, limit: int = MAX_NESTING) -> bool:
    """Whether ``value`` (parsed JSON) holds mappings or lists more than ``limit`` levels deep.

    Iterative, so it is safe on any depth; it stops at the first level past ``limit``.
    """
    stack: list[tuple[Any, int]] = [(value, 1)] if isinstance(value, dict | list) else []
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


class _TooDeep(yaml.MarkedYAMLError):
    """A YAML document nested past the limit (raised while composing, before any recursion)."""


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader with the nesting of mappings and sequences bounded: its composer
    recurses once per level, and a few thousand levels exhaust Python's stack."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        nested = self.check_event(yaml.SequenceStartEvent, yaml.MappingStartEvent)
        self._depth += nested
        try:
            if self._depth > MAX_NESTING:
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
                raise _TooDeep(problem=_too_deep(), problem_mark=mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= nested


def _too_deep() -> str:
    return f"nested deeper than {MAX_NESTING} levels"


def _json_error(exc: json.JSONDecodeError) -> str:
    return f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"


def _json_documents(text: str, source: str) -> list[Any]:
    try:
        doc = json.loads(text)
    except RecursionError:
        raise ConfigError(f"{source}: {_too_deep()}") from None
    if nests_deeper(doc):
        raise ConfigError(f"{source}: {_too_deep()}")
    return [doc]


def parse_documents(text: str, *, source: str = "<text>") -> list[Any]:
    """Every document in ``text`` (JSON, or YAML with ``---`` separators); empty ones dropped.

    Text that starts like JSON (``{`` or ``[``), or a ``.json`` source, that fails as JSON
    is reported in JSON terms (line, column), not the YAML parser's.
    """
    stripped = text.lstrip()
    json_error: json.JSONDecodeError | None = None
    if stripped.startswith(("{", "[")) or source.endswith(".json"):
        try:
            return _json_documents(text, source)
        except json.JSONDecodeError as exc:
            json_error = exc
        if source.endswith(".json"):
            raise ConfigError(f"{source}: {_json_error(json_error)}") from None
    try:
        docs = list(yaml.load_all(text, Loader=_BoundedLoader))
    except _TooDeep as exc:
        mark = exc.problem_mark
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise ConfigError(f"{source}: {_too_deep()}{where}") from None
    except yaml.YAMLError as exc:
        if json_error is not None:
            raise ConfigError(f"{source}: {_json_error(json_error)}") from None
        raise ConfigError(f"{source}: not valid YAML: {exc}") from None
    return [doc for doc in docs if doc is not None]


def read_documents(path: str | Path) -> list[Any]:
    """All documents of a file; ConfigError (naming the file once) when it cannot be read."""
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})"
        ) from None
    return parse_documents(text, source=str(path))


def read_document(path: str | Path) -> Any:
    """The single document of a file (an empty file reads as ``{}``)."""
    docs = read_documents(path)
    if len(docs) > 1:
        raise ConfigError(f"{path}: expected one document, found {len(docs)}")
    return docs[0] if docs else {}
