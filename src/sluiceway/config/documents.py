"""Reading configuration files: JSON or YAML, one document or several (``---``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from sluiceway.errors import ConfigError

__all__ = ["parse_documents", "read_document", "read_documents"]


def parse_documents(text: str, *, source: str = "<text>") -> list[Any]:
    """Every document in ``text`` (JSON, or YAML with ``---`` separators); empty ones dropped."""
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            return [json.loads(text)]
        except ValueError:
            pass  # YAML flow style is a superset; let the YAML parser report errors
    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid JSON or YAML: {exc}") from None
    return [doc for doc in docs if doc is not None]


def read_documents(path: str | Path) -> list[Any]:
    """All documents of a file; ConfigError when it cannot be read or parsed."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    return parse_documents(text, source=str(path))


def read_document(path: str | Path) -> Any:
    """The single document of a file (an empty file reads as ``{}``)."""
    docs = read_documents(path)
    if len(docs) > 1:
        raise ConfigError(f"{path}: expected one document, found {len(docs)}")
    return docs[0] if docs else {}
