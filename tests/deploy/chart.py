"""The sluiceway Helm chart for tests: its value sets, Helm's value merge, rendering, and the
sluiceway configuration files a release would mount (from the rendered ConfigMaps, or derived
straight from the values when the renderer is not installed).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "sluiceway"
GUIDE = ROOT / "tests" / "fixtures" / "guide"
RELEASE, NAMESPACE = "sluiceway", "llm-d-async"

# name -> values files, merged left to right as ``helm -f a -f b`` does.
VALUE_SETS: dict[str, tuple[Path, ...]] = {
    "defaults": (),
    **{p.stem: (p,) for p in sorted((CHART / "ci").glob("*.yaml"))},
    "guide-quota-only-evictable": (
        GUIDE / "values-redis-quota-only.yaml",
        GUIDE / "router-flow-control-evictable.yaml",
    ),
    "guide-saturation-holdback": (
        GUIDE / "values-redis-saturation-prometheus.yaml",
        GUIDE / "router-flow-control-holdback.yaml",
    ),
    "guide-tier-priority-admission": (
        GUIDE / "values-redis-tier-priority-admission.yaml",
        GUIDE / "router-flow-control-evictable.yaml",
    ),
}


def merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Helm's value merge: maps merge key by key, anything else is replaced."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def user_values(name: str) -> dict[str, Any]:
    """The values a user passes with ``-f`` for the value set ``name``."""
    values: dict[str, Any] = {}
    for path in VALUE_SETS[name]:
        values = merge(values, yaml.safe_load(path.read_text(encoding="utf-8")))
    return values


def effective_values(name: str) -> dict[str, Any]:
    """The chart's defaults with the user's values over them."""
    defaults = yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))
    return merge(defaults, user_values(name))


def render(values: dict[str, Any]) -> list[dict[str, Any]]:
    """Every object the chart renders for ``values`` (helm template, without a helm binary)."""
    helm = pytest.importorskip(
        "helm_python",
        reason="chart rendering needs helm-python-sdk: pip install -e '.[deploy-test]'",
    )
    with helm.Chart.load(str(CHART)) as chart:
        files = chart.render(values, name=RELEASE, namespace=NAMESPACE)
    docs = []
    for name, text in sorted(files.items()):
        if name.endswith(".yaml"):
            docs += [d for d in yaml.safe_load_all(text) if d]
    return docs


def derived_configs(values: dict[str, Any]) -> dict[str, Any]:
    """The sluiceway config files the chart mounts, by file name, built from the values."""
    objectives = [
        {
            "apiVersion": "llm-d.ai/v1alpha2",
            "kind": "InferenceObjective",
            "metadata": {"name": item["name"]},
            "spec": {"priority": item["priority"], "poolRef": {"name": values["poolName"]}},
        }
        for item in values["objectives"]["items"]
    ]
    configs: dict[str, Any] = {}
    if values["processor"]["enabled"]:
        configs["values.yaml"] = {"ap": values["ap"]}
    if values["sluicewayRouter"]["enabled"]:
        configs["router-values.yaml"] = {"router": values["router"]}
        configs["objectives.yaml"] = {"apiVersion": "v1", "kind": "List", "items": objectives}
    if values["coordinator"]["enabled"]:
        configs["coordinator.yaml"] = values["coordinator"]["config"]
    return configs


def rendered_configs(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """The same files, read from the rendered ConfigMaps."""
    wanted = ("values.yaml", "router-values.yaml", "objectives.yaml", "coordinator.yaml")
    found: dict[str, Any] = {}
    for doc in docs:
        if doc["kind"] == "ConfigMap":
            for key, text in doc.get("data", {}).items():
                if key in wanted:
                    found[key] = yaml.safe_load(text)
    return found
