"""Reading InferencePools (v1 and v1alpha2) and Pod readiness, without an API server."""

from __future__ import annotations

from typing import Any

import pytest

from sluiceway.errors import ConfigError
from sluiceway.router.inference_pool import (
    PodTarget,
    parse_selector,
    pod_name,
    pod_urls,
    pool_target,
)


def pod(
    name: str = "vllm-0",
    ip: str | None = "10.0.0.5",
    ready: str = "True",
    deleting: bool = False,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns"}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    status: dict[str, Any] = {"conditions": [{"type": "Ready", "status": ready}]}
    if ip is not None:
        status["podIP"] = ip
    return {"metadata": meta, "status": status}


def test_v1_pool_selects_match_labels_on_every_target_port() -> None:
    pool = {
        "apiVersion": "inference.networking.k8s.io/v1",
        "spec": {
            "selector": {"matchLabels": {"llm-d.ai/guide": "g", "app": "vllm"}},
            "targetPorts": [{"number": 8000}, {"number": 8001}],
            "endpointPickerRef": {"name": "epp"},
        },
    }
    target = pool_target(pool)
    assert target == PodTarget((("app", "vllm"), ("llm-d.ai/guide", "g")), (8000, 8001))
    assert target.selector == "app=vllm,llm-d.ai/guide=g"


def test_v1alpha2_pool_has_a_flat_selector_and_one_port() -> None:
    pool = {"spec": {"selector": {"app": "vllm"}, "targetPortNumber": 8000}}
    assert pool_target(pool) == PodTarget((("app", "vllm"),), (8000,))


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"selector": {"matchLabels": {"a": "b"}}, "targetPorts": []}, "spec.targetPorts"),
        ({"selector": {"matchLabels": {"a": "b"}}, "targetPorts": [{"number": 0}]},
         "spec.targetPorts[0]"),
        ({"selector": {"matchLabels": {}}, "targetPorts": [{"number": 1}]},
         "spec.selector.matchLabels"),
        ({"targetPorts": [{"number": 1}]}, "spec.selector"),
        ({"selector": {"a": 1}, "targetPortNumber": 8000}, "spec.selector"),
        ({"selector": {"a": "b"}, "targetPortNumber": "8000"}, "spec.targetPortNumber"),
        ({"selector": {"a": "b"}}, "spec"),
    ],
)  # fmt: skip
def test_a_bad_pool_names_the_field(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as info:
        pool_target({"spec": spec})
    assert info.value.field == field


def test_only_ready_pods_with_an_ip_that_are_not_deleting_take_traffic() -> None:
    assert pod_urls(pod(), (8000, 8001)) == ("http://10.0.0.5:8000", "http://10.0.0.5:8001")
    assert pod_urls(pod(ip="fd00::5"), (8000,)) == ("http://[fd00::5]:8000",)
    assert pod_urls(pod(ready="False"), (8000,)) == ()
    assert pod_urls(pod(ip=None), (8000,)) == ()
    assert pod_urls(pod(deleting=True), (8000,)) == ()
    assert pod_urls({"metadata": {"name": "x"}}, (8000,)) == ()
    assert pod_name(pod("vllm-3")) == "vllm-3"


def test_selector_flag() -> None:
    assert parse_selector("app=vllm, llm-d.ai/guide = g") == {"app": "vllm", "llm-d.ai/guide": "g"}
    for bad in ("app", "=x", "a=b,,c=d", ""):
        with pytest.raises(ConfigError, match="key=value"):
            parse_selector(bad)
