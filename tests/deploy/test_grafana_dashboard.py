"""The Grafana dashboard: its rows, its metric names, and a real Prometheus running every query."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sluiceway.localservices import PrometheusServer

from .metric_names import defined_names, metric_names

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "sluiceway.json"
ROWS = (
    "Processor: lanes and quotas",
    "Gates and their signals",
    "Router: bands, saturation, evictions",
    "Coordinator",
    "Coordinator: Batch API",
    "Model pool (vLLM)",
)


def _dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return data


def _queries() -> list[tuple[str, str]]:
    """(panel title, expression) for every query of every panel."""
    return [
        (panel["title"], target["expr"])
        for panel in _dashboard()["panels"]
        for target in panel.get("targets", [])
    ]


def test_the_dashboard_has_one_row_per_component_in_order() -> None:
    rows = [p["title"] for p in _dashboard()["panels"] if p["type"] == "row"]
    assert tuple(rows) == ROWS


def test_every_panel_has_a_query_and_unique_id() -> None:
    panels = _dashboard()["panels"]
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids))
    for panel in panels:
        if panel["type"] != "row":
            assert panel["targets"], panel["title"]


def test_queries_read_only_names_sluiceway_defines() -> None:
    known = defined_names()
    unknown = {(title, name) for title, expr in _queries() for name in metric_names(expr) - known}
    assert not unknown
    used = {name for _, expr in _queries() for name in metric_names(expr)}
    assert any(name.startswith("llm_d_epp_") for name in used)
    assert any(name.startswith("vllm:") for name in used)


def _query(server: PrometheusServer, expr: str) -> dict[str, Any]:
    url = f"{server.url}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            body: dict[str, Any] = json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        body = json.loads(exc.read())
    return body


@pytest.mark.prometheus
def test_a_real_prometheus_runs_every_query(
    prometheus_factory: Callable[..., PrometheusServer],
) -> None:
    server = prometheus_factory([])
    failures = []
    for title, expr in _queries():
        body = _query(server, expr)
        if body.get("status") != "success":
            failures.append((title, expr, body.get("error")))
    assert not failures
    broken = _query(server, "sum(rate(x[5m]")
    assert broken["status"] == "error"  # the check above can fail
