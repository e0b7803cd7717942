"""Document kind detection."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sluiceway.config import detect_kind
from sluiceway.config.kinds import check_file
from sluiceway.errors import ConfigError


@pytest.mark.parametrize(
    ("docs", "kind"),
    [
        ([[{"id": "p", "workers": 1}]], "pools"),
        ([{"type": "tier-priority"}], "merge-policy"),
        ([{"queues": []}], "transport-config"),
        ([{"ap": {}}], "helm-values"),
        ([{"router": {}}], "router-values"),
        ([{"kind": "EndpointPickerConfig"}], "endpoint-picker-config"),
        (
            [{"apiVersion": "serving.kserve.io/v1alpha1", "kind": "LLMInferenceService"}],
            "llm-inference-service",
        ),
        ([{"kind": "InferenceObjective"}, {"kind": "InferenceObjective"}], "inference-objectives"),
        ([{"redis_url": "r"}], "coordinator"),
        ([{"apiVersion": "v1", "kind": "Service"}], "kubernetes-manifest"),
    ],
)
def test_detect(docs: list[Any], kind: str) -> None:
    assert detect_kind(docs) == kind


@pytest.mark.parametrize(
    "docs",
    [
        [{"colour": 1}],
        [{}],
        [],
        ["text"],
        [{"kind": "InferenceObjective"}, {"apiVersion": "v1", "kind": "Service"}],
        [{"ap": {}}, {"ap": {}}],
        [{"apiVersion": "v1", "kind": ["Service"]}],  # once a TypeError: a list is unhashable
    ],
)
def test_rejects(docs: list[Any]) -> None:
    with pytest.raises(ConfigError):
        detect_kind(docs)


def test_a_manifest_of_non_mappings_is_a_config_error(tmp_path: Path) -> None:
    """``--kind kubernetes-manifest`` on a document that is not a mapping: one error line, not
    an AttributeError (found by tests/fuzz/test_fuzz_config.py)."""
    path = tmp_path / "manifest.yaml"
    path.write_text("apiVersion: v1\nkind: Service\n---\nnull-ish text\n")
    with pytest.raises(ConfigError, match="document 2: a Kubernetes object must be a mapping"):
        check_file(path, kind="kubernetes-manifest")
