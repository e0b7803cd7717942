"""Reading config files: JSON or YAML, several documents, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from sluiceway.config.documents import (
    MAX_NESTING,
    nests_deeper,
    parse_documents,
    read_document,
    read_documents,
)
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


def test_nesting_is_counted_in_mappings_and_lists_only() -> None:
    assert not nests_deeper({"a": [1, "x"]}, 2)
    assert nests_deeper({"a": [[1]]}, 2)
    assert not nests_deeper("scalar", 0)
    assert nests_deeper([[[]]] * 3, 2)


def test_documents_at_the_nesting_limit_load() -> None:
    inner = "[" * (MAX_NESTING - 1) + "]" * (MAX_NESTING - 1)
    assert parse_documents(f"a: {inner}\n")
    assert parse_documents(f"[{inner}]")


@pytest.mark.parametrize(
    "text",
    [
        "a: " + "[" * 5000 + "]" * 5000 + "\n",  # YAML flow style
        "".join("  " * i + "k:\n" for i in range(5000)),  # YAML block style
        "[" * 5000 + "]" * 5000,  # JSON past the parser's recursion
        "[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1),  # JSON past the limit only
    ],
    ids=["yaml-flow", "yaml-block", "json-5000", "json-65"],
)
def test_a_document_nested_past_the_limit_is_a_config_error_naming_the_file(text: str) -> None:
    with pytest.raises(ConfigError, match=r"^deep\.yaml: nested deeper than 64 levels"):
        parse_documents(text, source="deep.yaml")
