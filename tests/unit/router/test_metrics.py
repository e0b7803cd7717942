from __future__ import annotations

from prometheus_client import generate_latest

from sluiceway.flowcontrol.base import Request
from sluiceway.flowcontrol.controller import FlowController
from sluiceway.flowcontrol.settings import FlowControlSettings
from sluiceway.router.metrics import RouterMetrics


def test_fairness_ids_are_capped() -> None:
    metrics = RouterMetrics("p")
    labels = {metrics.fairness_label(f"t{i}") for i in range(1005)}
    assert len(labels) == 1001 and "other" in labels
    assert metrics.fairness_label("t3") == "t3"


def test_scrape_time_gauges_read_the_controller() -> None:
    controller = FlowController(FlowControlSettings(max_requests=10))
    assert controller.add(Request("r1", byte_size=100), 0.0) is None
    metrics = RouterMetrics("pool")
    metrics.watch(lambda: controller, lambda: 2, lambda: (("effective", 0.25),))
    labels = ("t", "0", "pool", "m", "m")
    metrics.queued(labels, 100, 1)
    metrics.finished(labels, "Dispatched", 0.5)
    metrics.cycle(0.001)
    text = generate_latest(metrics.registry).decode()
    assert (
        'llm_d_epp_flow_control_global_capacity_utilization_requests{inference_pool="pool"} 0.1'
        in text
    )
    assert (
        "llm_d_epp_flow_control_capacity_utilization_requests"
        '{inference_pool="pool",priority="0"} 0.0002' in text
    )
    assert 'llm_d_epp_flow_control_stale_endpoints{detector="default"} 2.0' in text
    assert (
        "inference_extension_flow_control_pool_saturation"
        '{inference_pool="pool",stage="effective"} 0.25' in text
    )
    assert "inference_extension_flow_control_queue_bytes{" in text
    assert (
        'llm_d_epp_flow_control_revocations_total{inference_pool="pool",outcome="confirmed"} 0.0'
        in text
    )


def test_upstream_failures_are_counted_by_phase_from_zero() -> None:
    metrics = RouterMetrics("pool")
    name = "sluiceway_router_upstream_failures_total"
    text = generate_latest(metrics.registry).decode()
    assert f'{name}{{inference_pool="pool",phase="mid_stream"}} 0.0' in text
    metrics.upstream_failed(mid_stream=True)
    metrics.upstream_failed(mid_stream=False)
    metrics.upstream_failed(mid_stream=False)
    text = generate_latest(metrics.registry).decode()
    assert f'{name}{{inference_pool="pool",phase="mid_stream"}} 1.0' in text
    assert f'{name}{{inference_pool="pool",phase="before_response"}} 2.0' in text


def test_ready_pods_are_read_when_scraped() -> None:
    """``inference_pool_ready_pods{name}``, unprefixed as upstream's pool gauges: the pool
    gates' budget queries divide by it."""
    metrics = RouterMetrics("pool")
    ready = [2]
    metrics.watch_pool(lambda: ready[0])
    assert (
        'inference_pool_ready_pods{name="pool"} 2.0' in generate_latest(metrics.registry).decode()
    )
    ready[0] = 0
    assert (
        'inference_pool_ready_pods{name="pool"} 0.0' in generate_latest(metrics.registry).decode()
    )
