"""InferenceObjective documents in every accepted apiVersion."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sluiceway.config import load_objectives, read_documents
from sluiceway.errors import ConfigError

GUIDE = Path(__file__).resolve().parents[2] / "fixtures" / "guide"


def _objective(api: str, name: str = "o", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": api, "kind": "InferenceObjective", "metadata": {"name": name},
            "spec": spec}  # fmt: skip


def test_guide_objectives() -> None:
    objectives = load_objectives(read_documents(GUIDE / "inferenceobjectives.yaml")).value
    assert {o.name: o.priority for o in objectives} == {
        "reserved-interactive": 100,
        "reserved-async": 60,
        "reserved-batch": 30,
        "overflow-interactive": 10,
        "overflow-async": -5,
        "overflow-batch": -10,
    }
    assert {o.pool_names for o in objectives} == {("llm-d-router",)}


def test_versions_and_defaults() -> None:
    docs = [
        _objective("inference.networking.x-k8s.io/v1alpha2", "a", poolRef={"name": "p"}),
        _objective("llm-d.ai/v1", "b", priority=5, poolRefs=[{"name": "p"}, {"name": "q"}]),
        _objective("llm-d.ai/v1", "c", poolSelector={"matchLabels": {"x": "y"}}),
    ]
    loaded = load_objectives(docs)
    a, b, c = loaded.value
    assert (a.priority, b.pool_names, c.pool_names) == (0, ("p", "q"), ())
    assert any("deprecated" in w for w in loaded.warnings)


def test_list_kind() -> None:
    docs = [{"kind": "List", "items": [_objective("llm-d.ai/v1alpha2", poolRef={"name": "p"})]}]
    assert len(load_objectives(docs).value) == 1


@pytest.mark.parametrize(
    "doc",
    [
        _objective("llm-d.ai/v1", poolRef={"name": "p"}),
        _objective("llm-d.ai/v1"),
        _objective("llm-d.ai/v1alpha2", poolRefs=[{"name": "p"}]),
        _objective("llm-d.ai/v9", poolRef={"name": "p"}),
        _objective("llm-d.ai/v1alpha2", priority="high"),
    ],
)
def test_bad_objectives(doc: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        load_objectives([doc])


def test_duplicate_names() -> None:
    doc = _objective("llm-d.ai/v1alpha2", poolRef={"name": "p"})
    with pytest.raises(ConfigError, match="duplicate objective"):
        load_objectives([doc, doc])
