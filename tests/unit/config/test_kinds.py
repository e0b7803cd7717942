"""Document kind detection."""

from __future__ import annotations

from typing import Any

import pytest

from sluiceway.config import detect_kind
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
    ],
)
def test_rejects(docs: list[Any]) -> None:
    with pytest.raises(ConfigError):
        detect_kind(docs)
