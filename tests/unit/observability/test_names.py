"""The metric names in sluiceway.observability.names are exactly the ones other systems read:
llm-d-async's processor metrics, the llm-d router's flow-control metrics, vLLM's metrics."""

from __future__ import annotations

import pytest

from sluiceway.observability import names

PROCESSOR = {
    "request_total", "request_retries_total", "successful_requests_total",
    "failed_requests_total", "shedded_requests_total", "exceeded_deadline_requests_total",
    "dispatched_requests_total", "tokens_total", "inference_latency_time_millis",
    "queue_residence_time_millis", "message_latency_time_millis", "queue_depth",
    "inflight_requests", "broker_backlog", "broker_backlog_source_available",
    "pool_worker_limit", "dispatch_budget", "gate_decisions_total", "gate_wait_requeues_total",
    "gate_metric_value", "gate_metric_threshold", "gate_metric_source_available",
    "deadline_proximity_millis", "invalid_entries_total", "infeasible_requests_total",
    "service_time_estimate_seconds", "entry_faults_total",
}  # fmt: skip
ROUTER_TWINNED = {
    "flow_control_request_queue_duration_seconds", "flow_control_dispatch_cycle_duration_seconds",
    "flow_control_request_enqueue_duration_seconds", "flow_control_queue_size",
    "flow_control_queue_bytes", "flow_control_pool_saturation",
}  # fmt: skip
ROUTER_OTHERS = {
    "flow_control_requests_total", "flow_control_stale_endpoints",
    "flow_control_capacity_utilization_requests", "flow_control_capacity_utilization_bytes",
    "flow_control_global_capacity_utilization_requests",
    "flow_control_global_capacity_utilization_bytes", "flow_control_revocations_issued_total",
    "flow_control_revocations_total", "flow_control_reclaim_target",
    "flow_control_pending_reclaim", "flow_control_revocation_confirmation_seconds",
}  # fmt: skip
VLLM = {
    "vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
    "vllm:cache_config_info", "vllm:time_to_first_token_seconds",
    "vllm:inter_token_latency_seconds", "vllm:e2e_request_latency_seconds",
    "vllm:request_queue_time_seconds", "vllm:prompt_tokens_total",
    "vllm:generation_tokens_total", "vllm:request_success_total", "vllm:num_preemptions_total",
    "vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total",
}  # fmt: skip


def test_processor_names() -> None:
    assert set(names.PROCESSOR_METRICS) == PROCESSOR
    assert len(names.PROCESSOR_METRICS) == len(PROCESSOR)
    assert names.processor_metric("queue_depth") == "llm_d_async_async_queue_depth"


def test_router_names_and_twins() -> None:
    assert set(names.ROUTER_TWINNED_METRICS) == ROUTER_TWINNED
    assert set(names.ROUTER_METRICS) == ROUTER_OTHERS
    assert names.router_metric("flow_control_queue_size", deprecated=True) == (
        "inference_extension_flow_control_queue_size"
    )
    with pytest.raises(KeyError):
        names.router_metric("flow_control_requests_total", deprecated=True)
    assert names.INFERENCE_POOL_READY_PODS == "inference_pool_ready_pods"


def test_simulator_names() -> None:
    assert set(names.VLLM_METRICS) == VLLM
    assert names.VLLM_GPU_CACHE_USAGE_PERC_LEGACY == "vllm:gpu_cache_usage_perc"


def test_label_values() -> None:
    assert names.GATE_DECISION_REASONS == ("gate_closed", "quota_exhausted", "dropped", "error")
    assert names.SATURATION_STAGES == ("prefill", "decode", "effective")
    assert names.PROCESSOR_LABELS == ("queue_id", "queue_name", "pool_name")
