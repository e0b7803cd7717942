"""Reading config files: JSON or YAML, several documents, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from sluiceway.config.documents import parse_documents, read_document, read_documents
from sluiceway.errors import ConfigError


def test_json_and_yaml_forms() -> None:
    assert parse_documents('{"a": 1}') == [{"a": 1}]
    assert parse_documents("[1, 2]") == [[1, 2]]
    assert parse_documents("{a: 1}") == [{"a": 1}]  # YAML flow style, not JSON
    assert parse_documents("a: 1\n---\n---\nb: 2\n") == [{"a": 1}, {"b": 2}]  # empty one dropped


def test_bad_text_names_its_source() -> None:
    with pytest.raises(ConfigError, match=r"values\.yaml: not valid YAML"):
        parse_documents("a: [1,\n", source="values.yaml")


def test_files(tmp_path: Path) -> None:
    many = tmp_path / "many.yaml"
    many.write_text("a: 1\n---\nb: 2\n")
    assert read_documents(many) == [{"a": 1}, {"b": 2}]
    with pytest.raises(ConfigError, match="expected one document, found 2"):
        read_document(many)
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert read_document(empty) == {}
    with pytest.raises(ConfigError, match="cannot read"):
        read_documents(tmp_path / "missing.yaml")
