"""The PromQL name extractor the dashboard and alert tests rely on."""

from __future__ import annotations

from .metric_names import defined_names, metric_names


def test_functions_labels_ranges_and_keywords_are_not_metric_names() -> None:
    expr = (
        'histogram_quantile(0.9, sum by (queue_name, le) (rate(a_bucket{reason="x y"}[5m])))'
        " / on (pool_name) group_left max by (pool_name) (b) unless c offset 5m > 1e-9"
    )
    assert metric_names(expr) == {"a_bucket", "b", "c"}


def test_colon_names_are_whole_names() -> None:
    assert metric_names("sum(vllm:num_requests_running) / 4") == {"vllm:num_requests_running"}


def test_defined_names_cover_histogram_series_and_both_router_prefixes() -> None:
    names = defined_names()
    assert "llm_d_async_async_queue_residence_time_millis_bucket" in names
    assert "inference_extension_flow_control_pool_saturation" in names
    assert "llm_d_epp_flow_control_requests_total" in names
    assert "vllm:time_to_first_token_seconds_bucket" in names
    assert "llm_d_async_async_made_up" not in names
