from __future__ import annotations

import json

import pytest

from sluiceway.coordinator.answers import (
    RETRY_AFTER_SECONDS,
    RequestRejected,
    answer_for_record,
    broker_unavailable,
    disallowed_method,
    is_cancelled_tombstone,
    pending_answer,
    rejected_answer,
)
from sluiceway.errors import BrokerError
from sluiceway.wire import ErrorCode, ResultRecord, encode_result


def test_an_http_result_is_mirrored() -> None:
    record = ResultRecord.ok("t:a", 201, '{"ok": true}').encode()
    answer = answer_for_record(record)
    assert (answer.status, answer.body) == (201, b'{"ok": true}')


@pytest.mark.parametrize(
    ("code", "status"),
    [
        (ErrorCode.GATE_DROPPED, 429),
        (ErrorCode.DEADLINE_EXCEEDED, 504),
        (ErrorCode.INVALID_REQUEST, 400),
        (ErrorCode.CANCELLED, 409),
        (ErrorCode.INFERENCE_ERROR, 502),
        (ErrorCode.GATE_ERROR, 502),
    ],
)
def test_a_failure_maps_by_its_code_into_the_openai_envelope(code: ErrorCode, status: int) -> None:
    answer = answer_for_record(ResultRecord.error("t:a", code).encode())
    assert answer.status == status
    error = json.loads(answer.body)["error"]
    assert error["code"] == str(code)
    assert error["message"]


def test_a_cancelled_result_is_a_conflict_the_sdk_does_not_retry() -> None:
    answer = answer_for_record(ResultRecord.error("t:a", ErrorCode.CANCELLED).encode())
    assert answer.status == 409
    assert ("x-should-retry", "false") in answer.headers
    error = json.loads(answer.body)["error"]
    assert (error["code"], error["type"]) == ("CANCELLED", "invalid_request_error")
    gated = answer_for_record(ResultRecord.error("t:a", ErrorCode.GATE_DROPPED).encode())
    assert not any(name == "x-should-retry" for name, _ in gated.headers)


@pytest.mark.parametrize("raw", ['{"id": "a", "status_code": 700, "payload": ""}', "not json"])
def test_a_malformed_result_is_502(raw: str) -> None:
    answer = answer_for_record(raw)
    assert answer.status == 502
    assert json.loads(answer.body)["error"]["code"] == "MALFORMED_RESULT"


def test_pending_echoes_the_id() -> None:
    answer = pending_answer("abc")
    assert answer.status == 202
    assert json.loads(answer.body) == {"id": "abc", "status": "pending"}
    assert dict(answer.headers) == {"content-type": "application/json", "x-request-id": "abc"}


def test_rejections_carry_status_type_and_code() -> None:
    answer = rejected_answer(RequestRejected(401, "invalid_api_key", "no key"))
    assert answer.status == 401
    assert json.loads(answer.body) == {
        "error": {"message": "no key", "type": "authentication_error", "code": "invalid_api_key"}
    }


def test_only_a_cancelled_record_is_a_tombstone() -> None:
    assert is_cancelled_tombstone(ResultRecord.error("a", ErrorCode.CANCELLED).encode())
    assert not is_cancelled_tombstone(ResultRecord.ok("a", 200, "{}").encode())
    assert not is_cancelled_tombstone("garbage")


def test_an_infeasible_result_is_a_504_that_says_why() -> None:
    raw = encode_result(
        ResultRecord.error(
            "r1", ErrorCode.DEADLINE_EXCEEDED, "infeasible: 3.0 s left, requests take 9.0 s"
        )
    )
    answer = answer_for_record(raw)
    assert answer.status == 504
    assert ("x-llm-d-request-dropped-reason", "infeasible") in answer.headers
    error = json.loads(answer.body)["error"]
    assert error["code"] == "DEADLINE_EXCEEDED" and error["message"].startswith("infeasible:")
    plain = answer_for_record(encode_result(ResultRecord.error("r2", ErrorCode.DEADLINE_EXCEEDED)))
    assert plain.status == 504 and "x-llm-d-request-dropped-reason" not in dict(plain.headers)


def test_a_method_a_path_does_not_take_is_405_naming_the_ones_it_does() -> None:
    answer = rejected_answer(disallowed_method("GET", "/v1/completions", ("POST",)))
    assert answer.status == 405
    assert ("allow", "POST") in answer.headers
    assert json.loads(answer.body)["error"]["code"] == "method_not_allowed"


def test_a_broker_down_past_the_retries_is_503_with_retry_after() -> None:
    answer = rejected_answer(broker_unavailable("LOOKUP_FAILED", BrokerError("redis down")))
    assert answer.status == 503
    assert ("retry-after", str(RETRY_AFTER_SECONDS)) in answer.headers
    error = json.loads(answer.body)["error"]
    assert (error["code"], error["type"]) == ("LOOKUP_FAILED", "server_error")
    assert "redis down" in error["message"]
