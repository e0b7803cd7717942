"""The /metrics text: vLLM names, text format 0.0.4, label gauge."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from sluiceway.observability import names
from sluiceway.sim import Engine, SimConfig, SimRequest
from sluiceway.sim.metrics import render_metrics


def _engine_after_one_request() -> Engine:
    engine = Engine(SimConfig(model='m"1', label_headers=("x-obj",)))
    engine.submit(SimRequest("a", (1, 2, 3), 3, labels=(("x-obj", "chat"),)), 0.0)
    t = 0.0
    while (due := engine.next_due()) is not None:
        t = due
        engine.step(t)
    return engine


def test_every_vllm_name_is_exported_and_parses() -> None:
    text = render_metrics(_engine_after_one_request())
    families = {f.name: f for f in text_string_to_metric_families(text)}
    for name in names.VLLM_METRICS:
        assert name.removesuffix("_total") in families
    assert "\nvllm_" not in text  # text format keeps the colon (OpenMetrics would not)
    ttft = families[names.VLLM_TTFT_SECONDS]
    count = [s.value for s in ttft.samples if s.name.endswith("_count")]
    assert count == [1]


def test_values_and_label_escaping() -> None:
    text = render_metrics(_engine_after_one_request())
    assert 'vllm:generation_tokens_total{model_name="m\\"1"} 3' in text
    assert 'vllm:request_success_total{model_name="m\\"1",finished_reason="length"} 1' in text
    assert f'{names.SIM_RUNNING_BY_LABEL}{{header="x-obj",value="chat"}} 0' in text
    assert 'le="+Inf"' in text
