"""The pool gates' PromQL: label values are quoted, empty labels left out."""

from __future__ import annotations

from sluiceway.gates.pool_queries import budget_queries, matchers, saturation_queries


def test_matchers_quote_and_skip_empty() -> None:
    assert matchers(inference_pool='a"b', namespace="") == '{inference_pool="a\\"b"}'
    assert matchers() == "{}"


def test_saturation_queries_prefer_current_prefix_and_effective_stage() -> None:
    found = saturation_queries("p", "ns")
    assert found[0] == (
        '1 - llm_d_epp_flow_control_pool_saturation{inference_pool="p",namespace="ns",'
        'stage="effective"}'
    )
    assert (
        found[1] == '1 - llm_d_epp_flow_control_pool_saturation{inference_pool="p",namespace="ns"}'
    )
    assert found[2].startswith("1 - inference_extension_flow_control_pool_saturation")
    assert len(found) == 4


def test_budget_queries_are_upstreams_three() -> None:
    first, second, third = budget_queries("p", "", 100)
    assert first == (
        "1 - (sum by(inference_pool)"
        '(inference_extension_flow_control_queue_size{inference_pool="p"})'
        ' / on() (inference_pool_ready_pods{name="p"} * 100))'
    )
    assert second == '1 - (avg by(name)(inference_pool_per_pod_queue_size{name="p"}) / 100)'
    assert third == (
        '1 - (sum(vllm:num_requests_running{inference_pool="p"}) / on() '
        '(inference_pool_ready_pods{name="p"} * 100))'
    )
