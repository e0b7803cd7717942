"""Result builders: one spelling per kind of result."""

from __future__ import annotations

import json

from sluiceway.gates.base import Decision, Verdict
from sluiceway.processor.results import (
    HttpAnswer,
    cancelled_result,
    deadline_result,
    dropped_result,
    gate_error_result,
    inference_error_result,
)


def test_the_deadline_result_is_the_last_answer_else_deadline_exceeded() -> None:
    answered = deadline_result("r", "t", HttpAnswer(503, "busy"))
    silent = deadline_result("r", "t", None, "deadline exceeded: timeout")
    assert (answered.status_code, answered.payload, answered.error_code) == (503, "busy", "")
    assert silent.error_code == "DEADLINE_EXCEEDED" and "timeout" in silent.payload


def test_a_drop_carries_the_gates_message_or_payload() -> None:
    plain = dropped_result("r", "t", Decision(Verdict.DROP))
    said = dropped_result("r", "t", Decision(Verdict.DROP, "over quota"))
    own = dropped_result("r", "t", Decision(Verdict.DROP, "x", drop_payload='{"code":429}'))
    assert plain.error_code == said.error_code == own.error_code == "GATE_DROPPED"
    assert json.loads(said.payload) == {"error": "over quota"}
    assert own.payload == '{"code":429}' and plain.payload != said.payload


def test_cancelled_and_error_results_carry_their_codes_and_token() -> None:
    cancelled = cancelled_result("r", "t")
    gate = gate_error_result("r", "t", Decision(Verdict.ERROR, "store down"))
    inference = inference_error_result("r", "t", "connection refused")
    assert (cancelled.error_code, cancelled.request_token) == ("CANCELLED", "t")
    assert gate.error_code == "GATE_ERROR" and "store down" in gate.payload
    assert inference.error_code == "INFERENCE_ERROR" and "connection refused" in inference.payload
