"""Header names and dropped reasons (the values the llm-d router sends)."""

from __future__ import annotations

from sluiceway.wire import headers


def test_names_are_pinned() -> None:
    assert headers.OBJECTIVE_ALIASES == (
        "x-llm-d-inference-objective",
        "x-gateway-inference-objective",
    )
    assert headers.FAIRNESS_ID_ALIASES == (
        "x-llm-d-inference-fairness-id",
        "x-gateway-inference-fairness-id",
    )
    assert headers.DROPPED_REASON == "x-llm-d-request-dropped-reason"
    assert headers.DROPPED_REASONS == (
        "rejected-saturated",
        "rejected-ttl-expired",
        "rejected-no-endpoints",
        "rejected-context-cancelled",
        "rejected-shutting-down",
        "evicted",
    )
    assert headers.SLO_TTFT_MS_ALIASES == ("x-llm-d-slo-ttft-ms", "x-slo-ttft-ms")
    assert headers.SLO_TPOT_MS_ALIASES == ("x-llm-d-slo-tpot-ms", "x-slo-tpot-ms")
    assert (headers.ASYNC_MODE, headers.TENANT) == ("x-llm-d-async-mode", "x-llm-d-tenant")
    assert headers.ASYNC_MODES == ("passthrough", "wait", "enqueue")
    assert headers.INFERENCE_TTL == "x-llm-d-inference-ttl"
    assert headers.DEFAULT_FAIRNESS_ID == "default-flow"
    assert headers.FLOW_QUEUE_DURATION_MS == "x-llm-d-flow-queue-duration-ms"
    assert (headers.REQUEST_ID, headers.RETRY_AFTER) == ("x-request-id", "retry-after")
    assert headers.SHOULD_RETRY == "x-should-retry"


def test_first_of_prefers_the_first_spelling() -> None:
    both = {"x-gateway-inference-objective": "old", "x-llm-d-inference-objective": "new"}
    assert headers.first_of(both, headers.OBJECTIVE_ALIASES) == "new"
    assert headers.first_of({"x-gateway-inference-objective": "old"}, headers.OBJECTIVE_ALIASES)
    assert headers.first_of({}, headers.OBJECTIVE_ALIASES) is None
