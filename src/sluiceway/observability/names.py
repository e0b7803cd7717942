"""Every metric name other systems read (dashboards, alerts, upstream's readers), defined once.

Dashboards, alert rules and the guide's PromQL depend on these exact strings; a test pins them.
Components build their collectors from these constants and never spell a name themselves.
"""

from __future__ import annotations

from typing import Final

# -- Async processor: prefix llm_d_async_async_, labels queue_id, queue_name, pool_name ------
PROCESSOR_PREFIX: Final = "llm_d_async_async_"
PROCESSOR_LABELS: Final = ("queue_id", "queue_name", "pool_name")

PROCESSOR_METRICS: Final = (
    "request_total",
    "request_retries_total",
    "successful_requests_total",
    "failed_requests_total",
    "shedded_requests_total",
    "exceeded_deadline_requests_total",
    "dispatched_requests_total",
    "tokens_total",
    "inference_latency_time_millis",
    "queue_residence_time_millis",
    "message_latency_time_millis",
    "queue_depth",
    "inflight_requests",
    "broker_backlog",
    "broker_backlog_source_available",
    "pool_worker_limit",
    "dispatch_budget",
    "gate_decisions_total",
    "gate_wait_requeues_total",
    "gate_metric_value",
    "gate_metric_threshold",
    "gate_metric_source_available",
    "deadline_proximity_millis",
    "invalid_entries_total",  # sluiceway's own
    "entry_faults_total",  # sluiceway's own (issue 26)
    "infeasible_requests_total",  # sluiceway's own
    "service_time_estimate_seconds",  # sluiceway's own
)
GATE_DECISION_REASONS: Final = ("gate_closed", "quota_exhausted", "dropped", "error")
TOKEN_DIRECTIONS: Final = ("input", "output")
# sluiceway's own processor gauges: an ``aimd`` gate's window, its slow-start threshold and the
# requests in flight through it (the processor's labels plus ``inference_pool``, the window's).
GATE_AIMD_WINDOW: Final = "sluiceway_gate_aimd_window"
GATE_AIMD_SSTHRESH: Final = "sluiceway_gate_aimd_ssthresh"
GATE_AIMD_IN_FLIGHT: Final = "sluiceway_gate_aimd_in_flight"
# sluiceway's own processor gauge: the order a queue's ingest reads in, 1 for the order in use
# and 0 for the other (labels: the processor's plus ``order``: earliest_deadline, latest_deadline).
PROCESSOR_PEEK_ORDER: Final = "sluiceway_processor_peek_order"

# -- Router: prefix llm_d_epp_ (six also under the deprecated inference_extension_) ---------
ROUTER_PREFIX: Final = "llm_d_epp_"
ROUTER_DEPRECATED_PREFIX: Final = "inference_extension_"

ROUTER_TWINNED_METRICS: Final = (
    "flow_control_request_queue_duration_seconds",
    "flow_control_dispatch_cycle_duration_seconds",
    "flow_control_request_enqueue_duration_seconds",
    "flow_control_queue_size",
    "flow_control_queue_bytes",
    "flow_control_pool_saturation",
)
ROUTER_METRICS: Final = (
    "flow_control_requests_total",
    "flow_control_stale_endpoints",
    "flow_control_capacity_utilization_requests",
    "flow_control_capacity_utilization_bytes",
    "flow_control_global_capacity_utilization_requests",
    "flow_control_global_capacity_utilization_bytes",
    "flow_control_revocations_issued_total",
    "flow_control_revocations_total",
    "flow_control_reclaim_target",
    "flow_control_pending_reclaim",
    "flow_control_revocation_confirmation_seconds",
)
SATURATION_STAGES: Final = ("prefill", "decode", "effective")
# sluiceway's own router metric: model-server calls that failed, by phase (``before_response``:
# answered 502; ``mid_stream``: the stream ended with an error event instead of ``[DONE]``).
ROUTER_UPSTREAM_FAILURES_TOTAL: Final = "sluiceway_router_upstream_failures_total"
ROUTER_UPSTREAM_FAILURE_PHASES: Final = ("before_response", "mid_stream")
# The InferencePool's own gauge, unprefixed as upstream's pool metrics are (label ``name``, the
# pool): the endpoints taking traffic. The pool gates' budget queries divide by it.
INFERENCE_POOL_READY_PODS: Final = "inference_pool_ready_pods"
# Requests moved to another endpoint after theirs failed before the response started.
ROUTER_UPSTREAM_RETRIES_TOTAL: Final = "sluiceway_router_upstream_retries_total"
# Per endpoint (label ``endpoint``): scrapes of its /metrics that failed, and the age of the
# vLLM reading its load is read from (+Inf: none, the router's own count stands in).
ROUTER_ENDPOINT_SCRAPE_FAILURES_TOTAL: Final = "sluiceway_router_endpoint_scrape_failures_total"
ROUTER_ENDPOINT_READING_AGE_SECONDS: Final = "sluiceway_router_endpoint_reading_age_seconds"

# -- Simulator: vLLM names, Prometheus text format (readers also accept vllm_) ---------------
VLLM_NUM_REQUESTS_RUNNING: Final = "vllm:num_requests_running"
VLLM_NUM_REQUESTS_WAITING: Final = "vllm:num_requests_waiting"
VLLM_KV_CACHE_USAGE_PERC: Final = "vllm:kv_cache_usage_perc"
VLLM_GPU_CACHE_USAGE_PERC_LEGACY: Final = "vllm:gpu_cache_usage_perc"
VLLM_CACHE_CONFIG_INFO: Final = "vllm:cache_config_info"
VLLM_TTFT_SECONDS: Final = "vllm:time_to_first_token_seconds"
VLLM_ITL_SECONDS: Final = "vllm:inter_token_latency_seconds"
VLLM_E2E_SECONDS: Final = "vllm:e2e_request_latency_seconds"
VLLM_QUEUE_TIME_SECONDS: Final = "vllm:request_queue_time_seconds"
VLLM_PROMPT_TOKENS_TOTAL: Final = "vllm:prompt_tokens_total"
VLLM_GENERATION_TOKENS_TOTAL: Final = "vllm:generation_tokens_total"
VLLM_REQUEST_SUCCESS_TOTAL: Final = "vllm:request_success_total"
VLLM_NUM_PREEMPTIONS_TOTAL: Final = "vllm:num_preemptions_total"
VLLM_PREFIX_CACHE_HITS_TOTAL: Final = "vllm:prefix_cache_hits_total"
VLLM_PREFIX_CACHE_QUERIES_TOTAL: Final = "vllm:prefix_cache_queries_total"

VLLM_METRICS: Final = (
    VLLM_NUM_REQUESTS_RUNNING,
    VLLM_NUM_REQUESTS_WAITING,
    VLLM_KV_CACHE_USAGE_PERC,
    VLLM_CACHE_CONFIG_INFO,
    VLLM_TTFT_SECONDS,
    VLLM_ITL_SECONDS,
    VLLM_E2E_SECONDS,
    VLLM_QUEUE_TIME_SECONDS,
    VLLM_PROMPT_TOKENS_TOTAL,
    VLLM_GENERATION_TOKENS_TOTAL,
    VLLM_REQUEST_SUCCESS_TOTAL,
    VLLM_NUM_PREEMPTIONS_TOTAL,
    VLLM_PREFIX_CACHE_HITS_TOTAL,
    VLLM_PREFIX_CACHE_QUERIES_TOTAL,
)
# vLLM's per-request histograms and its per-step token histogram, also served by the simulator.
VLLM_REQUEST_PROMPT_TOKENS: Final = "vllm:request_prompt_tokens"
VLLM_REQUEST_GENERATION_TOKENS: Final = "vllm:request_generation_tokens"
VLLM_REQUEST_PARAMS_MAX_TOKENS: Final = "vllm:request_params_max_tokens"
VLLM_REQUEST_INFERENCE_TIME_SECONDS: Final = "vllm:request_inference_time_seconds"
VLLM_REQUEST_PREFILL_TIME_SECONDS: Final = "vllm:request_prefill_time_seconds"
VLLM_REQUEST_DECODE_TIME_SECONDS: Final = "vllm:request_decode_time_seconds"
VLLM_ITERATION_TOKENS: Final = "vllm:iteration_tokens_total"
VLLM_REQUEST_HISTOGRAMS: Final = (
    VLLM_REQUEST_PROMPT_TOKENS,
    VLLM_REQUEST_GENERATION_TOKENS,
    VLLM_REQUEST_PARAMS_MAX_TOKENS,
    VLLM_REQUEST_INFERENCE_TIME_SECONDS,
    VLLM_REQUEST_PREFILL_TIME_SECONDS,
    VLLM_REQUEST_DECODE_TIME_SECONDS,
    VLLM_ITERATION_TOKENS,
)
# vLLM's label names on every vllm: series.
VLLM_LABELS: Final = ("model_name", "engine")
# sluiceway's own simulator gauge: running requests by a chosen request header's value.
SIM_RUNNING_BY_LABEL: Final = "sluiceway_sim_running"
# How late the simulator's event loop runs a timer (wall seconds): an overloaded simulator shows
# here before its latencies drift from the configured ones.
SIM_EVENT_LOOP_LAG: Final = "sluiceway_sim_event_loop_lag_seconds"
# How much later than its scheduled time each token reached the client (scaled seconds).
SIM_TOKEN_LATENESS: Final = "sluiceway_sim_token_lateness_seconds"


def processor_metric(name: str) -> str:
    """The full exported name of a processor metric."""
    if name not in PROCESSOR_METRICS:
        raise KeyError(f"unknown processor metric {name!r}")
    return PROCESSOR_PREFIX + name


def router_metric(name: str, *, deprecated: bool = False) -> str:
    """The full exported name of a router metric (optionally under the deprecated prefix)."""
    if name not in ROUTER_METRICS and name not in ROUTER_TWINNED_METRICS:
        raise KeyError(f"unknown router metric {name!r}")
    if deprecated and name not in ROUTER_TWINNED_METRICS:
        raise KeyError(f"{name!r} has no deprecated twin")
    return (ROUTER_DEPRECATED_PREFIX if deprecated else ROUTER_PREFIX) + name


# -- Coordinator: sluiceway's own (the upstream step exports none) --------------------------
COORDINATOR_REQUESTS_TOTAL: Final = "sluiceway_coordinator_requests_total"
COORDINATOR_HELD_CONNECTIONS: Final = "sluiceway_coordinator_held_connections"
COORDINATOR_LEARNED_PATIENCE: Final = "sluiceway_coordinator_learned_patience_seconds"
# the Batch API (docs/batch.md): batches this replica runs by status, batches ended by final
# status, lines written by outcome, and the time from creation to a final status
COORDINATOR_BATCHES_RUNNING: Final = "sluiceway_coordinator_batches_running"
COORDINATOR_BATCHES_FINISHED_TOTAL: Final = "sluiceway_coordinator_batches_finished_total"
COORDINATOR_BATCH_LINES_TOTAL: Final = "sluiceway_coordinator_batch_lines_total"
COORDINATOR_BATCH_DURATION_SECONDS: Final = "sluiceway_coordinator_batch_duration_seconds"

# -- HTTP, per component (sluiceway's own, issue 28): requests by route template, method,
# status and band; durations and, for streams, the time to the first byte ----------------
HTTP_LABELS: Final = ("route", "method", "status", "band")
# durations by status class (``2xx``, ``4xx``, ``5xx``): a fast drop is no fast answer
HTTP_DURATION_LABELS: Final = ("route", "status_class", "band")
HTTP_TTFB_LABELS: Final = ("route", "band")  # streamed answers only
ROUTER_HTTP_REQUESTS_TOTAL: Final = "sluiceway_router_http_requests_total"
ROUTER_HTTP_DURATION_SECONDS: Final = "sluiceway_router_http_request_duration_seconds"
ROUTER_HTTP_TTFB_SECONDS: Final = "sluiceway_router_http_time_to_first_byte_seconds"
COORDINATOR_HTTP_REQUESTS_TOTAL: Final = "sluiceway_coordinator_http_requests_total"
COORDINATOR_HTTP_DURATION_SECONDS: Final = "sluiceway_coordinator_http_request_duration_seconds"
COORDINATOR_HTTP_TTFB_SECONDS: Final = "sluiceway_coordinator_http_time_to_first_byte_seconds"
# component -> (requests counter, duration histogram, time-to-first-byte histogram)
HTTP_METRICS: Final = {
    "router": (ROUTER_HTTP_REQUESTS_TOTAL, ROUTER_HTTP_DURATION_SECONDS, ROUTER_HTTP_TTFB_SECONDS),
    "coordinator": (
        COORDINATOR_HTTP_REQUESTS_TOTAL,
        COORDINATOR_HTTP_DURATION_SECONDS,
        COORDINATOR_HTTP_TTFB_SECONDS,
    ),
}

# The shared capacity ledger of several router replicas (docs/flow-control.md).
ROUTER_LEDGER_CONNECTED: Final = "sluiceway_router_ledger_connected"
ROUTER_LEDGER_REPLICAS: Final = "sluiceway_router_ledger_replicas"
ROUTER_LEDGER_LEASES: Final = "sluiceway_router_ledger_leases"
ROUTER_LEDGER_WAITING: Final = "sluiceway_router_ledger_waiting_requests"
ROUTER_LEDGER_CALLS_TOTAL: Final = "sluiceway_router_ledger_calls_total"
ROUTER_LEDGER_UNREACHABLE_TOTAL: Final = "sluiceway_router_ledger_unreachable_total"
