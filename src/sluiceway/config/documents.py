"""Reading configuration files: JSON or YAML, one document or several (``---``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from sluiceway.errors import ConfigError

__all__ = ["parse_documents", "read_document", "read_documents"]


def _json_error(exc: json.JSONDecodeError) -> str:
    return f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"


def parse_documents(text: str, *, source: str = "<text>") -> list[Any]:
    """Every document in ``text`` (JSON, or YAML with ``---`` separators); empty ones dropped.

    Text that starts like JSON (``{`` or ``[``), or a ``.json`` source, that fails as JSON
    is reported in JSON terms (line, column), not the YAML parser's.
    """
    stripped = text.lstrip()
    json_error: json.JSONDecodeError | None = None
    if stripped.startswith(("{", "[")) or source.endswith(".json"):
        try:
            return [json.loads(text)]
        except json.JSONDecodeError as exc:
            json_error = exc
        if source.endswith(".json"):
            raise ConfigError(f"{source}: {_json_error(json_error)}") from None
    try:
        docs = list(yaml.safe_load_all(text))
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
