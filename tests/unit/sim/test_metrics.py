"""The /metrics text: vLLM names and labels, text format 0.0.4, request histograms, lag."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from sluiceway.observability import names
from sluiceway.sim import Engine, SimConfig, SimRequest
from sluiceway.sim.loop_lag import LoopLagProbe
from sluiceway.sim.metrics import render_metrics


def _engine_after_one_request() -> Engine:
    engine = Engine(SimConfig(model='m"1', label_headers=("x-obj",), max_model_len=100))
    request = SimRequest("a", (1, 2, 3), 3, labels=(("x-obj", "chat"),), max_tokens_param=3)
    engine.submit(request, 0.0)
    t = 0.0
    while (due := engine.next_due()) is not None:
        t = due
        engine.step(t)
    return engine


def _families(text: str) -> dict[str, object]:
    return {f.name: f for f in text_string_to_metric_families(text)}


def test_every_vllm_name_is_exported_with_vllms_labels() -> None:
    text = render_metrics(_engine_after_one_request())
    families = _families(text)
    for name in (*names.VLLM_METRICS, *names.VLLM_REQUEST_HISTOGRAMS):
        family = families.get(name) or families[name.removesuffix("_total")]
        for sample in family.samples:  # type: ignore[attr-defined]
            assert sample.labels["engine"] == "0", sample
            if name != names.VLLM_CACHE_CONFIG_INFO:  # vLLM's info gauge has no model_name
                assert sample.labels["model_name"] == 'm"1', sample
    assert "\nvllm_" not in text  # text format keeps the colon (OpenMetrics would not)


def test_request_histograms_use_vllms_buckets() -> None:
    text = render_metrics(_engine_after_one_request())
    for line in (
        'vllm:request_prompt_tokens_bucket{model_name="m\\"1",engine="0",le="5.0"} 1',
        'vllm:request_prompt_tokens_bucket{model_name="m\\"1",engine="0",le="2.0"} 0',
        'vllm:request_params_max_tokens_sum{model_name="m\\"1",engine="0"} 3',
        'vllm:request_generation_tokens_count{model_name="m\\"1",engine="0"} 1',
        'vllm:iteration_tokens_total_bucket{model_name="m\\"1",engine="0",le="16384.0"}',
    ):
        assert line in text, line
    # 1-2-5 bounds up to max_model_len (100), as vLLM's build_1_2_5_buckets.
    assert 'vllm:request_prompt_tokens_bucket{model_name="m\\"1",engine="0",le="100.0"}' in text
    assert 'le="200.0"' not in text
    # Default config: prefill = TTFT 20 ms, decode = 2 x ITL 10 ms, on the engine's timeline.
    assert 'vllm:request_prefill_time_seconds_sum{model_name="m\\"1",engine="0"} 0.02' in text
    assert 'vllm:request_decode_time_seconds_sum{model_name="m\\"1",engine="0"} 0.02' in text
    assert 'vllm:request_inference_time_seconds_sum{model_name="m\\"1",engine="0"} 0.04' in text


def test_delivery_histograms_stay_empty_until_a_client_receives_tokens() -> None:
    # The engine alone schedules tokens; TTFT/ITL/E2E are recorded when they are delivered.
    text = render_metrics(_engine_after_one_request())
    assert 'vllm:time_to_first_token_seconds_count{model_name="m\\"1",engine="0"} 0' in text


def test_values_label_escaping_and_the_lag_gauge() -> None:
    text = render_metrics(_engine_after_one_request(), lag=LoopLagProbe())
    assert 'vllm:generation_tokens_total{model_name="m\\"1",engine="0"} 3' in text
    assert (
        'vllm:request_success_total{model_name="m\\"1",engine="0",finished_reason="length"} 1'
        in text
    )
    assert f'{names.SIM_RUNNING_BY_LABEL}{{header="x-obj",value="chat"}} 0' in text
    assert f"\n{names.SIM_EVENT_LOOP_LAG} 0\n" in text
    assert f'{names.SIM_TOKEN_LATENESS}_bucket{{model_name="m\\"1",engine="0",le="0.0005"}}' in text
    assert 'le="+Inf"' in text
