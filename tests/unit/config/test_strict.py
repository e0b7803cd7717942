"""Strict models: unknown keys, dotted error paths, cosmetic-key warnings and ``check`` hooks."""

from __future__ import annotations

import pytest
from pydantic import Field

from sluiceway.config.strict import (
    CamelModel,
    StrictModel,
    collect_warnings,
    join_path,
    validate_model,
)
from sluiceway.errors import ConfigError


class Leaf(CamelModel):
    COSMETIC = frozenset({"logLevel"})

    max_items: int = Field(default=1, gt=0)
    log_level: str = ""

    def check(self, path: str) -> list[str]:
        return [f"{path}: many"] if self.max_items > 100 else []


class Tree(StrictModel):
    leaves: list[Leaf] = Field(default_factory=list)
    named: dict[str, Leaf] = Field(default_factory=dict)


def test_join_path_puts_indices_in_brackets() -> None:
    assert join_path("ap", "workerPools", 0, "gate_params") == "ap.workerPools[0].gate_params"
    assert join_path("", "queues", 2) == "queues[2]"
    assert join_path("") == ""


def test_errors_name_the_dotted_path_under_the_prefix() -> None:
    with pytest.raises(ConfigError) as unknown:
        validate_model(Tree, {"leaves": [{}, {"colour": 1}]}, path="doc")
    assert unknown.value.field == "doc.leaves[1].colour"
    assert "unknown key" in str(unknown.value)
    with pytest.raises(ConfigError) as bad:
        validate_model(Tree, {"named": {"a": {"maxItems": 0}}})
    assert bad.value.field == "named.a.maxItems"


def test_several_errors_are_all_mentioned() -> None:
    with pytest.raises(ConfigError) as info:
        validate_model(Tree, {"leaves": [{"maxItems": 0}, {"maxItems": -1}]})
    assert info.value.field == "leaves[0].maxItems"
    assert "also: leaves[1].maxItems" in str(info.value)


def test_warnings_walk_the_tree() -> None:
    loaded = validate_model(
        Tree, {"leaves": [{"logLevel": "debug"}], "named": {"x": {"maxItems": 500}}}, path="t"
    )
    assert loaded.warnings == (
        "t.leaves[0].logLevel: accepted and ignored (no effect here)",
        "t.named.x: many",
    )
    assert collect_warnings(Leaf()) == []


def test_models_are_frozen() -> None:
    leaf = Leaf()
    with pytest.raises(ValueError, match="frozen"):
        leaf.max_items = 3  # type: ignore[misc]
