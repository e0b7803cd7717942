"""The dashboard against live exporters: a simulator, a processor with Scenario C's saturation
gate and a coordinator, on a private Redis, scraped by a private Prometheus. After a short load
every query of the processor, gate, coordinator and model pool rows returns data, except the
few listed below with the reason they stay empty in this run, and none of the alert rules
fires; with the gate's Prometheus unreachable, the blind-gate alert does.

The router row is checked against a live router in ``test_dashboard_router.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from sluiceway.localservices import PrometheusServer, RedisServer

from .processes import sluiceway

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "sluiceway.json"
EXAMPLES = ROOT / "deploy" / "examples"
ALERT_RULES = ROOT / "deploy" / "prometheus" / "alerts.yaml"
LIVE_ROWS = {
    "Processor: lanes and quotas",
    "Gates and their signals",
    "Coordinator",
    "Model pool (vLLM)",
}
# (panel title, refId) -> why it has no series in this run.
EXPECTED_EMPTY = {
    ("Outcomes (req/s)", "C"): "no request reaches its deadline (the counter starts at the first)",
    ("Dead letters (entries moved to <queue>:invalid, last hour)", "A"): "no unreadable entry",
    ("Parked requests requeued after the gate wait (per s)", "A"): "no wait lasts 5 minutes",
}
PUBLISHED = {"premium": 8, "batch": 16}
# What Scenario C's gate reads (the example's query), so the load starts once it can see.
GATE_SIGNAL = 'sum(vllm:num_requests_running{inference_pool="llm-d-router"})'


def _targets() -> list[tuple[str, str, str]]:
    """(panel title, refId, expr) of the rows checked here."""
    panels = json.loads(DASHBOARD.read_text())["panels"]
    found, row = [], ""
    for panel in panels:
        if panel["type"] == "row":
            row = panel["title"]
        elif row in LIVE_ROWS:
            found += [(panel["title"], t["refId"], t["expr"]) for t in panel["targets"]]
    return found


def _query(server: PrometheusServer, expr: str) -> list[Any]:
    url = f"{server.url}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=10) as resp:
        body = json.loads(resp.read())
    assert body["status"] == "success", (expr, body)
    result: list[Any] = body["data"]["result"]
    return result


def _value(server: PrometheusServer, expr: str) -> float | None:
    """The single value ``expr`` returns now, or None when it returns nothing."""
    result = _query(server, expr)
    return float(result[0]["value"][1]) if result else None


def _hostport(url: str) -> str:
    return url.split("//", 1)[1].rstrip("/")


def _processor_values(folder: Path, sim: str, redis: RedisServer, prom: str) -> Path:
    """Scenario C's example, pointed at the private services."""
    text = (EXAMPLES / "c-saturation-gate" / "processor-values.yaml").read_text()
    text = text.replace("http://llm-d-router-epp:80", sim).replace(
        "redis:6379", f"{redis.host}:{redis.port}"
    )
    data = yaml.safe_load(text)
    data["ap"]["prometheusURL"] = prom
    data["ap"]["transportConfig"]["urlSecret"]["url"] = redis.url
    path = folder / "processor-values.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _coordinator_config(folder: Path, sim: str, redis: RedisServer) -> Path:
    data = yaml.safe_load((EXAMPLES / "i-coordinator" / "coordinator.yaml").read_text())
    data["gateway"]["address"] = sim
    data["pipeline"]["steps"][0]["params"]["redis_url"] = redis.url
    path = folder / "coordinator.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _scrape(server: PrometheusServer, targets: list[str], rules: Path | None = None) -> None:
    """Point the running Prometheus at ``targets`` (they exist only after it started) and,
    given ``rules``, have it evaluate that rule file."""
    quoted = ", ".join(f"'{t}'" for t in targets)
    rule_files = f"rule_files: ['{rules}']\n" if rules else ""
    server.config_file.write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        + rule_files
        + "scrape_configs:\n  - job_name: sluiceway\n"
        f"    static_configs:\n      - targets: [{quoted}]\n"
        "        labels: {inference_pool: llm-d-router}\n"
    )
    server.reload()


def _publish(redis: RedisServer) -> None:
    for team, count in PUBLISHED.items():
        subprocess.run(
            [sys.executable, "-m", "sluiceway", "publish", team, str(count), "--url", redis.url],
            check=True,
            capture_output=True,
            timeout=60,
        )


def _coordinator_calls(coordinator: str) -> None:
    from openai import OpenAI

    client = OpenAI(base_url=f"{coordinator}/v1", api_key="unused", max_retries=0)
    for mode, tenant in (("passthrough", "realtime"), ("wait", "batch")):
        answer = client.completions.create(
            model="Qwen/Qwen3-32B",
            prompt="hi",
            max_tokens=8,
            extra_headers={"x-llm-d-async-mode": mode, "x-llm-d-tenant": tenant},
        )
        assert answer.choices


def _wait_for(check: Callable[[], bool], what: str, within: float = 90.0) -> None:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if check():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.slow
@pytest.mark.redis
@pytest.mark.prometheus
def test_dashboard_queries_return_data_from_live_exporters(
    tmp_path: Path,
    redis_server: RedisServer,
    prometheus_factory: Callable[..., PrometheusServer],
) -> None:
    env = {**os.environ, "REDIS_URL": redis_server.url}
    sim_args = ["sim", "--profile", "guide-pool", "--model", "Qwen/Qwen3-32B", "--time-scale", "1"]
    with sluiceway(tmp_path, "sim", *sim_args) as sim:
        prom = prometheus_factory(
            [_hostport(sim)], target_labels={"inference_pool": "llm-d-router"}
        )
        # The gate's first read must see the signal, or it starts open on its fallback.
        _wait_for(lambda: _value(prom, GATE_SIGNAL) is not None, "the gate's signal")
        values = _processor_values(tmp_path, sim, redis_server, prom.url)
        coord_config = _coordinator_config(tmp_path, sim, redis_server)
        with (
            sluiceway(tmp_path, "processor", "processor", "--config", str(values), env=env) as proc,
            sluiceway(tmp_path, "coordinator", "coordinator", "--config", str(coord_config)) as co,
        ):
            _scrape(prom, [_hostport(u) for u in (sim, proc, co)], rules=ALERT_RULES)
            _wait_for(lambda: _value(prom, "sum(up)") == 3, "three targets up")
            _publish(redis_server)
            _coordinator_calls(co)
            total = sum(PUBLISHED.values())
            done = "sum(llm_d_async_async_successful_requests_total)"
            _wait_for(lambda: (_value(prom, done) or 0) >= total, "every success scraped")
            # A series born during the run needs two scrapes before rate() returns it.
            born = "min(count_over_time(sluiceway_coordinator_requests_total[1m]))"
            _wait_for(lambda: (_value(prom, born) or 0) >= 2, "two scrapes of the coordinator")
            empty = [(t, r) for t, r, e in _targets() if not _query(prom, e)]
            alerts = _query(prom, "ALERTS")
    # At most the listed queries may come back empty (a counter first exported at zero may
    # already show).
    assert set(empty) <= set(EXPECTED_EMPTY), sorted(set(empty) - set(EXPECTED_EMPTY))
    assert alerts == []  # a healthy run raises none of sluiceway's alerts


@pytest.mark.slow
@pytest.mark.redis
@pytest.mark.prometheus
def test_a_blind_gate_raises_its_alert_on_a_real_prometheus(
    tmp_path: Path,
    redis_server: RedisServer,
    prometheus_factory: Callable[..., PrometheusServer],
) -> None:
    """Prometheus loads deploy/prometheus/alerts.yaml; a processor whose gate cannot reach its
    Prometheus exports ``gate_metric_source_available 0`` and the alert goes pending."""
    from sluiceway.ports import free_port

    env = {**os.environ, "REDIS_URL": redis_server.url}
    sim_args = ["sim", "--profile", "guide-pool", "--model", "Qwen/Qwen3-32B", "--time-scale", "4"]
    with sluiceway(tmp_path, "sim", *sim_args) as sim:
        prom = prometheus_factory([])
        nowhere = f"http://127.0.0.1:{free_port()}"  # nothing listens: the gate is blind
        values = _processor_values(tmp_path, sim, redis_server, nowhere)
        with sluiceway(
            tmp_path, "processor", "processor", "--config", str(values), env=env
        ) as proc:
            _scrape(prom, [_hostport(proc)], rules=ALERT_RULES)
            _publish(redis_server)
            pending = 'ALERTS{alertname="SluicewayGateBlind", alertstate="pending"}'
            _wait_for(lambda: bool(_query(prom, pending)), "the blind-gate alert")
            (alert,) = _query(prom, pending)
    assert alert["metric"]["pool_name"] == "teams"
    assert alert["metric"]["severity"] == "warning"
