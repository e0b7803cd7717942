"""The text-format reader: vLLM's two spellings, the router's two prefixes, the effective stage."""

from __future__ import annotations

from sluiceway.signals.scrape import (
    ScrapeSource,
    canonical_name,
    parse_metrics,
    select,
    spellings,
)

PAGE = """\
# HELP vllm:num_requests_running Running.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m",engine="0"} 3.0
vllm_num_requests_waiting{model_name="m"} 7
inference_extension_flow_control_pool_saturation{inference_pool="p",stage="decode"} 0.9
llm_d_epp_flow_control_pool_saturation{inference_pool="p",stage="effective"} 0.4
llm_d_epp_flow_control_pool_saturation{inference_pool="q"} 0.1
odd{path="a \\"quoted\\" \\\\ value\\n"} +Inf 1700000000000
not a sample line
broken{x="1"} notanumber
"""


def test_parse_reads_names_labels_and_values() -> None:
    samples = parse_metrics(PAGE)
    assert [s.name for s in samples][:2] == [
        "vllm:num_requests_running",
        "vllm_num_requests_waiting",
    ]
    assert samples[0].labels == {"model_name": "m", "engine": "0"} and samples[0].value == 3.0
    odd = next(s for s in samples if s.name == "odd")
    assert odd.labels["path"] == 'a "quoted" \\ value\n' and odd.value == float("inf")
    assert len(samples) == 6


def test_canonical_names() -> None:
    assert canonical_name("vllm_num_requests_waiting") == "vllm:num_requests_waiting"
    assert canonical_name("inference_extension_flow_control_queue_size") == (
        "llm_d_epp_flow_control_queue_size"
    )
    assert canonical_name("vllm:gpu_cache_usage_perc") == "vllm:kv_cache_usage_perc"
    assert canonical_name("up") == "up"
    assert set(spellings("vllm_kv_cache_usage_perc")) == {
        "vllm:kv_cache_usage_perc",
        "vllm_kv_cache_usage_perc",
        "vllm:gpu_cache_usage_perc",
        "vllm_gpu_cache_usage_perc",
    }
    assert spellings("up") == ("up",)


def test_parse_only_keeps_the_named_metrics_in_any_spelling() -> None:
    samples = parse_metrics(PAGE, only=("vllm:num_requests_waiting", "vllm_num_requests_running"))
    assert [s.name for s in samples] == ["vllm:num_requests_running", "vllm_num_requests_waiting"]
    assert parse_metrics(PAGE, only=("absent",)) == []


def test_select_accepts_either_spelling_and_prefers_effective() -> None:
    samples = parse_metrics(PAGE)
    waiting = select(samples, "vllm:num_requests_waiting")
    assert [s.value for s in waiting] == [7.0]
    pool_p = select(
        samples, "inference_extension_flow_control_pool_saturation", {"inference_pool": "p"}
    )
    assert [s.labels["stage"] for s in pool_p] == ["effective", "decode"]
    assert select(samples, "vllm:num_requests_running", {"model_name": "other"}) == ()


async def test_unreachable_page_reads_as_an_error() -> None:
    source = ScrapeSource("http://127.0.0.1:9/metrics", "up", timeout=2)
    try:
        reading = await source.read()
    finally:
        await source.aclose()
    assert reading.error.startswith("http://127.0.0.1:9/metrics")
