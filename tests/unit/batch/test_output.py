"""Output and error lines in OpenAI's shape, for every kind of stored result."""

from __future__ import annotations

import json

from sluiceway.batch.output import (
    cancelled_line,
    expired_line,
    line_for_result,
    line_id,
)
from sluiceway.wire import ErrorCode, ResultRecord


def doc(text: bytes) -> dict[str, object]:
    assert text.endswith(b"\n") and text.count(b"\n") == 1
    parsed = json.loads(text)
    assert set(parsed) == {"id", "custom_id", "response", "error"}
    return parsed  # type: ignore[no-any-return]


def test_a_2xx_answer_goes_to_the_output_file() -> None:
    record = ResultRecord.ok("t:batch_1-1", 200, '{"choices":[]}')
    line = line_for_result("batch_req_1_1", "c1", "batch_1-1", record)
    assert line.ok
    assert doc(line.text) == {
        "id": "batch_req_1_1",
        "custom_id": "c1",
        "response": {"status_code": 200, "request_id": "batch_1-1", "body": {"choices": []}},
        "error": None,
    }


def test_another_status_goes_to_the_error_file_with_its_response() -> None:
    line = line_for_result("i", "c", "r", ResultRecord.ok("x", 400, "not json"))
    parsed = doc(line.text)
    assert not line.ok
    assert parsed["response"] == {"status_code": 400, "request_id": "r", "body": "not json"}


def test_results_without_an_answer_carry_an_error_code() -> None:
    dropped = line_for_result("i", "c", "r", ResultRecord.error("x", ErrorCode.GATE_DROPPED))
    assert doc(dropped.text)["error"] == {
        "code": "gate_dropped",
        "message": "Pool gating dropped request",
    }
    late = line_for_result("i", "c", "r", ResultRecord.error("x", ErrorCode.DEADLINE_EXCEEDED))
    assert late.text == expired_line("i", "c").text
    stopped = line_for_result("i", "c", "r", ResultRecord.error("x", ErrorCode.CANCELLED))
    assert stopped.text == cancelled_line("i", "c").text
    assert doc(stopped.text)["error"]["code"] == "batch_cancelled"  # type: ignore[index]


def test_line_ids_name_batch_and_line() -> None:
    assert line_id("batch_abc", 7) == "batch_req_abc_7"
