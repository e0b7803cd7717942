"""Header stamping: objectives, fairness, lanes, precedence."""

from __future__ import annotations

from sluiceway.processor.headers import (
    HeaderPolicy,
    build_headers,
    build_url,
    queue_ttl,
    queued_seconds,
)
from sluiceway.wire.lanes import LANES

TIER = HeaderPolicy(
    stamp_lanes=True,
    lane_objectives={"reserved-batch": "reserved-batch", "overflow-batch": "best-effort"},
    fairness_attribute="team",
)


def test_url_join() -> None:
    assert build_url("http://gw:80/", "/v1/completions") == "http://gw:80/v1/completions"
    assert build_url("http://gw", "v1/chat") == "http://gw/v1/chat"


def test_lane_objective_and_fairness_override_the_queue() -> None:
    out = build_headers(
        request_id="r1",
        caller_headers={"X-Trace": "1", "X-LLM-D-Inference-Fairness-Id": "spoofed"},
        metadata={"team": "batch"},
        queue_objective="queue-obj",
        lane=LANES[2],
        policy=TIER,
    )
    assert out["x-llm-d-inference-objective"] == "reserved-batch"
    assert out["x-llm-d-inference-fairness-id"] == "batch"
    assert out["x-trace"] == "1" and out["content-type"] == "application/json"
    assert out["x-request-id"] == "r1"
    assert sum(k == "x-llm-d-inference-objective" for k in out) == 1


def test_lane_without_objective_keeps_the_queue_objective_or_caller_override() -> None:
    out = build_headers(
        request_id="r",
        caller_headers={},
        metadata={},
        queue_objective="q-obj",
        lane=LANES[0],
        policy=TIER,
    )
    assert out["x-llm-d-inference-objective"] == "q-obj"
    assert "x-llm-d-inference-fairness-id" not in out


def test_random_robin_stamps_no_lane_but_fairness_and_priority_only_with_lanes() -> None:
    policy = HeaderPolicy(fairness_attribute="team", priority_header="x-prio")
    out = build_headers(
        request_id="r",
        caller_headers={"x-request-id": "mine"},
        metadata={"team": "t\nx"},
        queue_objective="",
        lane=LANES[5],
        policy=policy,
    )
    assert "x-llm-d-inference-objective" not in out and "x-prio" not in out
    assert "x-llm-d-inference-fairness-id" not in out  # illegal value skipped
    assert out["x-request-id"] == "mine"


def test_priority_header_carries_the_lane_index() -> None:
    policy = HeaderPolicy(stamp_lanes=True, priority_header="x-gateway-priority")
    out = build_headers(
        request_id="r",
        caller_headers={},
        metadata={},
        queue_objective="",
        lane=LANES[4],
        policy=policy,
    )
    assert out["x-gateway-priority"] == "4"


def test_fairness_can_be_disabled() -> None:
    policy = HeaderPolicy(fairness_header="", fairness_attribute="team")
    out = build_headers(
        request_id="r",
        caller_headers={},
        metadata={"team": "a"},
        queue_objective="",
        lane=LANES[0],
        policy=policy,
    )
    assert "x-llm-d-inference-fairness-id" not in out


def test_a_callers_objective_in_either_spelling_is_the_one_objective_sent() -> None:
    for spelling in ("X-Gateway-Inference-Objective", "x-llm-d-inference-objective"):
        out = build_headers(
            request_id="r",
            caller_headers={spelling: "mine"},
            metadata={},
            queue_objective="queue-obj",
            lane=LANES[2],
            policy=TIER,
        )
        objectives = {k: v for k, v in out.items() if "inference-objective" in k}
        assert objectives == {"x-llm-d-inference-objective": "mine"}


def test_the_queue_objective_is_sent_once_under_the_configured_header() -> None:
    policy = HeaderPolicy(objective_header="x-gateway-inference-objective")
    out = build_headers(
        request_id="r",
        caller_headers={},
        metadata={},
        queue_objective="queue-obj",
        lane=LANES[0],
        policy=policy,
    )
    objectives = {k: v for k, v in out.items() if "inference-objective" in k}
    assert objectives == {"x-gateway-inference-objective": "queue-obj"}


def test_the_queue_budget_is_the_time_left_less_the_model_time() -> None:
    assert queue_ttl(20.0, 2.5) == "17.500s"
    assert queue_ttl(1.0, 2.5) == "0.001s"  # too late already: dropped if it must queue
    assert queue_ttl(3.0, -1.0) == "3.000s"


def test_the_routers_queue_duration_is_read_in_seconds() -> None:
    assert queued_seconds({"x-llm-d-flow-queue-duration-ms": "1500"}) == 1.5
    assert queued_seconds({}) == 0.0
    assert queued_seconds({"x-llm-d-flow-queue-duration-ms": "soon"}) == 0.0
